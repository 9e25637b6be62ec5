// The in-process harness: our own processes' code started in this process against the real stack,
// the gateway (over HTTP on a loopback port) and a worker fleet (real Temporal workers polling the
// suite's task queues), on a database of the suite's own. Suites start their stack with
// startService; startGateway and startWorkers are its parts, for the suites that need a gateway
// alone, more workers beside it or several gateways.
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { Config } from '../../shared/config.js';
import type { Database } from '../../db/index.js';
import type { Storage } from '../../shared/storage.js';
import type { App } from '../../api/app.js';
import { createGateway, type Gateway as GatewayService } from '../../api/gateway.js';
import type { WorkerFleet } from '../../worker/workers.js';
import { createWorkerService, type WorkerService, type WorkerServiceOverrides } from '../../worker/service.js';
import { parseRoles } from '../../worker/roles.js';
import { createTestDatabase, testConfig, waitFor, type TestDatabase } from './stack.js';

/** A gateway a test talks to over HTTP: in this process (startGateway) or a child process (spawnGateway). */
export interface Gateway {
  baseUrl: string;
  close(): Promise<void>;
}

/** The gateway service (api/gateway.ts) running in this process, as the gateway process builds it. */
export interface InProcessGateway extends Gateway {
  service: GatewayService;
  app: App;
  client: Client;
  storage: Storage;
}

export async function startGateway(config: Config, db: Database, opts: { temporal?: Client; clock?: () => Date } = {}): Promise<InProcessGateway> {
  // Tests bind loopback only, on a free port.
  const service = createGateway(
    { ...config, HOST: '127.0.0.1', PORT: 0 },
    { db, processExtras: false, ...(opts.temporal ? { temporal: opts.temporal } : {}), ...(opts.clock ? { clock: opts.clock } : {}) },
  );
  await service.start();
  return {
    service,
    baseUrl: service.baseUrl,
    app: service.app,
    client: service.temporal,
    storage: service.storage,
    close: () => service.stop({ graceMs: 0 }),
  };
}

let runtimeInstalled = false;
/** The SDK logs every worker state change at INFO; tests keep warnings only. */
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger(process.env.TEST_SDK_LOG_LEVEL === 'INFO' ? 'INFO' : 'WARN') });
  } catch {
    // already installed by this process
  }
}

export interface Workers {
  service: WorkerService;
  fleet: WorkerFleet;
  running: Promise<void>;
  stop(): Promise<void>;
}

/** The worker service (worker/service.ts) for `roles`, running in this process on the suite's queues. */
export async function startWorkers(
  config: Config,
  db: Database,
  roles = 'all',
  opts: Pick<WorkerServiceOverrides, 'activityInterceptors' | 'storage' | 'extraActivities' | 'logDestination'> = {},
): Promise<Workers> {
  quietRuntime();
  const service = createWorkerService(config, parseRoles(roles), { db, processExtras: false, ...opts });
  await service.start();
  return { service, fleet: service.fleet, running: service.done, stop: () => service.stop() };
}

/** A small JSON HTTP client for tests. */
export function api(baseUrl: string, key?: string) {
  async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let json: any = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    return { status: res.status, body: json, text, headers: res.headers };
  }
  return {
    get: (path: string) => call('GET', path),
    post: (path: string, body?: unknown, headers?: Record<string, string>) => call('POST', path, body, headers),
    call,
  };
}

/** An answer in the API's error shape with this status and code (a message, nothing else). */
export function assertApiError(r: { status: number; body: any }, status: number, code: string): void {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.deepEqual(Object.keys(r.body?.error ?? {}).sort(), ['code', 'message']);
  assert.equal(r.body.error.code, code);
  assert.equal(typeof r.body.error.message, 'string');
}

/** The workspace's credit balance as stored. */
export async function creditsOf(db: Database, t: { workspaceId: string }): Promise<number> {
  const ws = await db.selectFrom('workspaces').select('credits').where('id', '=', t.workspaceId).executeTakeFirstOrThrow();
  return ws.credits;
}

/** Polls a job's status endpoint until it reports one of `statuses`; returns the job record. */
export async function waitForJobStatus(client: ReturnType<typeof api>, path: string, statuses: string[], timeoutMs = 120_000): Promise<any> {
  return waitFor(
    `${path} to reach ${statuses.join('/')}`,
    async () => {
      const r = await client.get(path);
      return statuses.includes(r.body?.data?.status) ? r.body.data : undefined;
    },
    timeoutMs,
    200,
  );
}

export interface Service {
  tdb: TestDatabase;
  config: Config;
  gw: InProcessGateway;
  workers: Workers;
  close(): Promise<void>;
}

/** How a suite's service runs, beyond its config overrides. */
export interface ServiceOptions {
  /** The worker roles to run (worker/roles.ts syntax, e.g. 'workflows,io,fetch,provider:fal'); 'all' by default. */
  roles?: string;
  /** Worker service overrides (activity interceptors, storage, extra activities, log destination). */
  workers?: Pick<WorkerServiceOverrides, 'activityInterceptors' | 'storage' | 'extraActivities' | 'logDestination'>;
  /** Gateway options (a Temporal client, a clock), as startGateway takes them. */
  gateway?: { temporal?: Client; clock?: () => Date };
}

/**
 * A suite's whole service: its own database, a gateway and a worker fleet on its own task queues.
 * What started before a failing step is closed again before the error is rethrown.
 */
export async function startService(overrides: Record<string, string> = {}, opts: ServiceOptions = {}): Promise<Service> {
  const tdb = await createTestDatabase();
  let gateway: InProcessGateway | undefined;
  try {
    const config = testConfig(tdb.url, overrides);
    const gw = (gateway = await startGateway(config, tdb.db, opts.gateway));
    const workers = await startWorkers(config, tdb.db, opts.roles, opts.workers);
    return {
      tdb,
      config,
      gw,
      workers,
      async close() {
        try {
          await workers.stop();
        } finally {
          try {
            await gw.close();
          } finally {
            await tdb.drop();
          }
        }
      },
    };
  } catch (err) {
    // The start's own error is the one to report, not a failure to close after it.
    await gateway?.close().catch(() => {});
    await tdb.drop().catch(() => {});
    throw err;
  }
}
