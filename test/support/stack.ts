// Test access to the real stack that `npm test` provisions (scripts/stack.sh up test): a fresh
// Postgres database per suite, a unique task-queue prefix per suite, waiting helpers.
import pg from 'pg';
import { Client as MinioClient } from 'minio';
import { createDb, type Database } from '../../db/index.js';
import { migrateToLatest } from '../../db/migrate.js';
import { randomToken } from '../../shared/ids.js';
import { loadConfig, type Config } from '../../shared/config.js';
import { testCodecSettings } from './codec.js';
import { createWorkspace, createApiKey, createProject } from '../../db/repos/workspaces.js';
import { newId } from '../../shared/ids.js';
import { insertJobWithCharge } from '../../db/repos/jobs.js';
import type { ProviderName } from '../../shared/job-model.js';

export function requireStackEnv(): void {
  for (const v of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'S3_ENDPOINT']) {
    if (!process.env[v]) throw new Error(`${v} is not set: run the tests with \`npm test\`, which starts the stack`);
  }
}

export interface TestDatabase {
  url: string;
  db: Database;
  drop(): Promise<void>;
}

/** A new, migrated database on the stack's Postgres server, dropped at the end of the suite. */
export async function createTestDatabase(): Promise<TestDatabase> {
  requireStackEnv();
  const base = new URL(process.env.DATABASE_URL!);
  const name = `t_${randomToken(12)}`;
  const admin = new pg.Client({ connectionString: withDb(base, 'postgres') });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = withDb(base, name);
  // The test's own session: unbounded, like an operator's psql, since fixtures write and vacuum in
  // bulk (the gateways and workers a test starts get the service's bounds from their config).
  const db = createDb(url, 20, {}, { statementMs: 0, lockMs: 0, idleInTransactionMs: 0 });
  await migrateToLatest(db);
  return {
    url,
    db,
    async drop() {
      await db.destroy();
      const c = new pg.Client({ connectionString: withDb(base, 'postgres') });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

function withDb(base: URL, name: string): string {
  const u = new URL(base.toString());
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * Limits that stay out of an end-to-end suite's way: generous request rates, and no reconciler sweep
 * on its own clock (a suite runs the reconciler when it means to).
 */
export const unhurriedLimits = { RATE_LIMIT_GENERATE_PER_MIN: '1000', RATE_LIMIT_POLL_PER_MIN: '100000', RECONCILE_INTERVAL_MS: '3600000' };

/** Config for a suite: the stack's services, its own database and task queues. */
export function testConfig(databaseUrl: string, overrides: Record<string, string> = {}): Config {
  return loadConfig({
    ...process.env,
    NODE_ENV: 'test',
    // Every suite's processes seal payloads (the environment's keys, else the test key).
    ...testCodecSettings(),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATABASE_URL: databaseUrl,
    TASK_QUEUE_PREFIX: `t-${randomToken(10)}`,
    PORT: '0',
    API_METRICS_PORT: '0',
    // No route health probes unless a suite asks for them (they would hit the fakes on their own clock).
    ROUTE_PROBE_INTERVAL_MS: '0',
    // In-process workers share the test's process, which also runs ffprobe on files it made itself
    // (probes of outputs) that the sandbox user may not read: the sandbox is the subject of
    // media-sandbox.test.ts and of the worker processes of the prod profile.
    MEDIA_SANDBOX: process.env.MEDIA_SANDBOX ?? 'off',
    ...overrides,
  });
}

export interface Tenant {
  workspaceId: string;
  projectId: string;
  apiKey: string;
  apiKeyId: string;
  ownerEmail: string;
}

/** A workspace with an owner, a project and a key. */
export async function createTenant(db: Database, credits = 1000): Promise<Tenant> {
  const ownerEmail = `owner-${randomToken(6)}@example.test`;
  const ws = await createWorkspace(db, { name: 'Test workspace', ownerEmail, credits });
  const project = await createProject(db, ws.id, 'Test project');
  const key = await createApiKey(db, { workspaceId: ws.id, name: 'test', actorEmail: ownerEmail });
  return { workspaceId: ws.id, projectId: project.id, apiKey: key.key, apiKeyId: key.id, ownerEmail };
}

/**
 * A charged `pending` image job written straight to the database, with no workflow: for tests and
 * benchmarks that drive the row themselves.
 */
export async function insertImageJob(
  db: Database,
  t: Tenant,
  opts: { prompt?: string; price?: number; deadlineSeconds?: number; route?: { provider: ProviderName; provider_model_id?: string } } = {},
) {
  const id = newId('img');
  return db.transaction().execute((tx) =>
    insertJobWithCharge(tx, {
      id,
      kind: 'image',
      workspaceId: t.workspaceId,
      projectId: t.projectId,
      apiKeyId: t.apiKeyId,
      model: 'nano-banana-2',
      params: {
        prompt: opts.prompt ?? `test ${id}`,
        aspect_ratio: '1:1',
        count: 1,
        provider: 'local',
        ...opts.route,
        deadline_seconds: opts.deadlineSeconds ?? 600,
      },
      price: opts.price ?? 1,
    }),
  );
}

/** Polls until `check` returns a value other than undefined/false, or fails naming what it waited for. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 60_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A raw S3 client on the stack's MinIO, for tests that inspect the bucket (incomplete uploads, prefixes). */
export function rawMinioClient(config: Config): MinioClient {
  const s3 = new URL(config.S3_ENDPOINT);
  return new MinioClient({
    endPoint: s3.hostname,
    port: Number(s3.port),
    useSSL: s3.protocol === 'https:',
    accessKey: config.S3_ACCESS_KEY,
    secretKey: config.S3_SECRET_KEY,
    region: config.S3_REGION,
    pathStyle: true,
  });
}
