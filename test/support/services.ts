// Starts our own processes' code in-process against the real stack: the gateway (over HTTP on a
// loopback port) and a worker fleet (real Temporal workers polling the suite's task queues).
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { pino } from 'pino';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { Config } from '../../shared/config.js';
import type { Database } from '../../db/index.js';
import { createStorage, type Storage } from '../../shared/storage.js';
import { createApp, type App } from '../../api/app.js';
import { createWorkerFleet, type FleetDeps, type WorkerFleet } from '../../worker/workers.js';
import { parseRoles } from '../../worker/roles.js';
import { createWorkerMetrics } from '../../worker/metrics.js';
import { createTestDatabase, testConfig, waitFor, type TestDatabase } from './stack.js';

export interface Gateway {
  baseUrl: string;
  app: App;
  client: Client;
  storage: Storage;
  close(): Promise<void>;
}

export async function startGateway(config: Config, db: Database, opts: { temporal?: Client } = {}): Promise<Gateway> {
  const logger = pino({ level: config.LOG_LEVEL });
  const connection = opts.temporal ? null : await Connection.connect({ address: config.TEMPORAL_ADDRESS });
  const client = opts.temporal ?? new Client({ connection: connection!, namespace: config.TEMPORAL_NAMESPACE });
  const storage = createStorage(config);
  // Listen first: as api/server.ts does, media links use the gateway's own address when no public URL is set.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const appConfig = config.PUBLIC_BASE_URL ? config : { ...config, PUBLIC_BASE_URL: `http://127.0.0.1:${port}` };
  const app = createApp({ config: appConfig, db, storage, temporal: client, logger });
  server.on('request', app.app);
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    app,
    client,
    storage,
    async close() {
      await app.closeStreams();
      await new Promise((r) => server.close(r));
      server.closeAllConnections?.();
      await app.close();
      await connection?.close();
    },
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
  fleet: WorkerFleet;
  running: Promise<void>;
  stop(): Promise<void>;
}

export async function startWorkers(config: Config, db: Database, roles = 'all', opts: Pick<FleetDeps, 'activityInterceptors'> = {}): Promise<Workers> {
  quietRuntime();
  const logger = pino({ level: config.LOG_LEVEL });
  const fleet = await createWorkerFleet({ config, db, storage: createStorage(config), logger, metrics: createWorkerMetrics(), ...opts }, parseRoles(roles));
  const running = fleet.run();
  return {
    fleet,
    running,
    async stop() {
      await fleet.shutdown();
    },
  };
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
  gw: Gateway;
  workers: Workers;
  close(): Promise<void>;
}

/** A suite's whole service: its own database, a gateway and a worker fleet on its own task queues. */
export async function startService(overrides: Record<string, string> = {}): Promise<Service> {
  const tdb = await createTestDatabase();
  const config = testConfig(tdb.url, overrides);
  const gw = await startGateway(config, tdb.db);
  const workers = await startWorkers(config, tdb.db);
  return {
    tdb,
    config,
    gw,
    workers,
    async close() {
      await workers.stop();
      await gw.close();
      await tdb.drop();
    },
  };
}
