// What scripts/histories/save-histories.ts builds its recordings from: saving a closed workflow's history,
// a group of paths on a database and task queues of its own, job steps (create, wait, reset), a
// Postgres proxy that can cut the workers off, and a webhook receiver with scripted answers.
import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { createTestDatabase, testConfig, unhurriedLimits, waitFor, type Tenant, type TestDatabase } from '../../test/support/stack.js';
import { api, startGateway, startWorkers, type InProcessGateway, type Workers } from '../../test/support/services.js';
import { Holds } from '../../test/support/holds.js';
import { createDb } from '../../db/index.js';
import type { Config } from '../../shared/config.js';
import type { HistoryName } from '../../test/workflows/saved-histories.js';

export type History = temporal.api.history.v1.IHistory;

export const outDir = fileURLToPath(new URL('../../../test/workflows/histories/', import.meta.url));

export const saved = new Map<HistoryName, number>();

export async function save(name: HistoryName, handle: WorkflowHandle): Promise<void> {
  await waitFor(`${handle.workflowId}'s workflow to close`, async () => ((await handle.describe()).status.name !== 'RUNNING' ? true : undefined), 180_000, 200);
  const history = await handle.fetchHistory();
  await writeHistory(name, history);
  console.log(`saved ${history.events?.length ?? 0} events of ${handle.workflowId} as ${name}.json`);
}

async function writeHistory(name: HistoryName, history: History): Promise<void> {
  await writeFile(`${outDir}${name}.json`, `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 1)}\n`);
  saved.set(name, history.events?.length ?? 0);
}

/**
 * The groups named on the command line (words each matched against a group's name), or every group
 * when none is named: `node dist/scripts/histories/save-histories.js pipeline encrypted` re-saves those
 * groups' histories and leaves every other saved file as it is.
 */
export const only = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const selected = (name: string) => only.length === 0 || only.some((w) => name.includes(w));

export interface Group {
  tdb: TestDatabase;
  config: Config;
  gw: InProcessGateway;
  workers: Workers;
}

/** A database, a gateway and a worker fleet of their own (the workers on `workerDbUrl` when given), for `fn`. */
export async function group(
  name: string,
  overrides: Record<string, string>,
  fn: (g: Group) => Promise<void>,
  opts: { workerDbUrl?: (dbUrl: string) => Promise<string>; holds?: Holds } = {},
): Promise<void> {
  if (!selected(name)) return void console.log(`-- ${name}: skipped (not named on the command line)`);
  console.log(`-- ${name}`);
  const tdb = await createTestDatabase();
  const config = testConfig(tdb.url, { ...unhurriedLimits, ...overrides });
  const workerDb = opts.workerDbUrl ? createDb(await opts.workerDbUrl(tdb.url), 5) : undefined;
  const gw = await startGateway(config, tdb.db);
  const workers = await startWorkers(config, workerDb ?? tdb.db, 'all', opts.holds ? { activityInterceptors: [opts.holds.activityInterceptor] } : {});
  try {
    await fn({ tdb, config, gw, workers });
  } finally {
    await workers.stop();
    await gw.close();
    await workerDb?.destroy();
    await tdb.drop();
  }
}

/** Creates a job over HTTP; answers its id. */
export async function create(g: Group, t: Tenant, path: string, body: Record<string, unknown>): Promise<string> {
  const r = await api(g.gw.baseUrl, t.apiKey).post(path, { project_id: t.projectId, ...body });
  if (r.status !== 200) throw new Error(`POST ${path} answered ${r.status}: ${r.text}`);
  return r.body.data.id as string;
}

export async function jobStatus(g: Group, id: string): Promise<{ status: string; phase: string | null; error: unknown }> {
  return g.tdb.db.selectFrom('jobs').select(['status', 'phase', 'error']).where('id', '=', id).executeTakeFirstOrThrow();
}

/** Waits for the job's workflow run (the latest, unless `runId`) to close with the job as `expect`, then saves its history. */
export async function finish(g: Group, name: HistoryName, id: string, expect: 'completed' | 'failed', runId?: string): Promise<void> {
  const handle = g.gw.client.workflow.getHandle(id, runId);
  await waitFor(`${name}: ${id}'s workflow to close`, async () => ((await handle.describe()).status.name !== 'RUNNING' ? true : undefined), 180_000, 200);
  const row = await jobStatus(g, id);
  if (row.status !== expect) throw new Error(`${name} job ${id} ended ${row.status} (${JSON.stringify(row.error)}), expected ${expect}`);
  await save(name, handle);
}

/** The job generating at the provider (its reference recorded). */
export async function generating(g: Group, id: string): Promise<void> {
  await waitFor(`${id} to be generating at the provider`, async () => {
    const r = await jobStatus(g, id);
    return r.status === 'generating' && r.phase === 'generating' ? true : undefined;
  });
}

/** Closed as `status`; answers its run id. */
export async function closedAs(client: Client, id: string, status: string): Promise<string> {
  return waitFor(
    `${id}'s workflow to close as ${status}`,
    async () => {
      const d = await client.workflow.getHandle(id).describe();
      return d.status.name === status ? d.runId : undefined;
    },
    180_000,
    200,
  );
}

/** What the Web UI's Reset does: a new run from the history up to the workflow task completed at `eventId`. */
export async function reset(g: Group, id: string, runId: string, eventId: temporal.api.history.v1.IHistoryEvent['eventId'], reason: string): Promise<string> {
  const r = await g.gw.client.workflowService.resetWorkflowExecution({
    namespace: g.config.TEMPORAL_NAMESPACE,
    workflowExecution: { workflowId: id, runId },
    workflowTaskFinishEventId: eventId,
    requestId: randomUUID(),
    reason,
  });
  if (!r.runId || r.runId === runId) throw new Error(`the reset of ${id} started no new run`);
  return r.runId;
}

/**
 * A loopback TCP proxy to Postgres that can be cut off: down() closes every open connection and
 * refuses new ones (a Postgres outage as a worker sees it), up() lets connections through again.
 */
export async function startPgProxy(target: URL): Promise<{ url(dbUrl: string): string; down(): void; up(): void; close(): Promise<void> }> {
  let isDown = false;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (isDown) return void client.destroy();
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url(dbUrl) {
      const u = new URL(dbUrl);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    down() {
      isDown = true;
      for (const s of open) s.destroy();
    },
    up() {
      isDown = false;
    },
    close: () => {
      for (const s of open) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

/** A loopback webhook receiver answering each request with the next status of `answers` (the last repeats). */
export async function startReceiver(answers: number[]): Promise<{ url: string; received: number; close(): Promise<void> }> {
  const state = { url: '', received: 0 };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      state.received++;
      res.writeHead(answers.length > 1 ? answers.shift()! : answers[0]!).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/replay`;
  return Object.assign(state, {
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  });
}

export const imageBody = (prompt: string) => ({ prompt, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
