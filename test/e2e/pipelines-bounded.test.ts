// Pipelines whose Postgres work cannot go on, on the real stack (gateway over HTTP, Temporal,
// Postgres, MinIO, the local renderer), with the workers' pool bounded as DATABASE_LOCK_TIMEOUT_MS
// bounds it (500 ms here):
// - a step's statement stuck behind a row lock another session holds fails at the lock timeout
//   (55P03), the step retries, and once the lock is released the pipeline completes, charged once;
// - a step whose provider returned fewer outputs than asked (count 2, one image) leaves the next
//   step referencing its second output without one: that step fails at once, never charged, and
//   the pipeline ends failed with an error naming the step.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { sql } from 'kysely';
import { createTenant, createTestDatabase, testConfig, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startGateway, startWorkers, type InProcessGateway as Gateway, type Workers } from '../support/services.js';
import { createDb, defaultDbTimeouts, type Database } from '../../db/index.js';
import type { Config } from '../../shared/config.js';
import { imageStep, videoStep } from '../support/pipeline-steps.js';

const LOCK_TIMEOUT_MS = 500;

let tdb: TestDatabase;
let config: Config;
let gw: Gateway;
let workers: Workers;
let workerDb: Database;

/** Each attempt of a pipeline activity: its type, when it ran, and its error's Postgres code. */
const attempts: { type: string; startedAt: number; endedAt: number; pipelineId: string; code?: string; message?: string }[] = [];
const recordAttempts: ActivityInterceptorsFactory = (ctx) => ({
  inbound: {
    execute: async (input, next) => {
      const type = ctx.info.activityType;
      if (!type.startsWith('pipeline')) return next(input);
      const a: (typeof attempts)[number] = { type, startedAt: Date.now(), endedAt: 0, pipelineId: ctx.info.workflowExecution?.workflowId ?? '' };
      attempts.push(a);
      try {
        return await next(input);
      } catch (err) {
        a.code = (err as { code?: string }).code;
        a.message = (err as Error).message;
        throw err;
      } finally {
        a.endedAt = Date.now();
      }
    },
  },
});

before(async () => {
  tdb = await createTestDatabase();
  config = testConfig(tdb.url, {
    RECONCILE_INTERVAL_MS: '3600000',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
    LOCAL_RENDER_FAULTS: 'true',
    DATABASE_LOCK_TIMEOUT_MS: String(LOCK_TIMEOUT_MS),
  });
  gw = await startGateway(config, tdb.db);
  // The workers' own pool, bounded as the worker service bounds it from its configuration.
  workerDb = createDb(tdb.url, 20, {}, { ...defaultDbTimeouts, lockMs: config.DATABASE_LOCK_TIMEOUT_MS });
  workers = await startWorkers(config, workerDb, 'all', { activityInterceptors: [recordAttempts] });
});

after(async () => {
  await workers?.stop();
  await gw?.close();
  await workerDb?.destroy();
  await tdb?.drop();
});

async function create(t: Tenant, steps: unknown[]): Promise<any> {
  const r = await api(gw.baseUrl, t.apiKey).post('/v1/pipelines', { project_id: t.projectId, steps });
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

const ended = (t: Tenant, id: string) =>
  waitFor(
    `pipeline ${id} to end`,
    async () => {
      const r = await api(gw.baseUrl, t.apiKey).get(`/v1/pipelines/${id}`);
      assert.equal(r.status, 200, r.text);
      return r.body.data.status === 'completed' || r.body.data.status === 'failed' ? r.body.data : undefined;
    },
    120_000,
    200,
  );

describe('a step stuck behind a row lock', () => {
  test('fails at the lock timeout, retries, and completes once the lock is released, charged once', async () => {
    const t = await createTenant(tdb.db, 1000);
    const before = await creditsOf(tdb.db, t);
    const created = await create(t, [imageStep('a lighthouse behind a lock')]);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const holding = new Promise<void>((resolve) => (locked = resolve));
    // Another session holds the pipeline's row lock, as a stalled transaction would.
    const holder = tdb.db.transaction().execute(async (tx) => {
      await sql`select id from pipelines where id = ${created.id} for update`.execute(tx);
      locked();
      await released;
    });
    await holding;
    try {
      const timedOut = await waitFor(
        'a pipeline activity to fail at the lock timeout',
        async () => attempts.find((a) => a.pipelineId === created.id && a.code === '55P03'),
        60_000,
        50,
      );
      assert.match(timedOut.message ?? '', /lock timeout/);
      assert.ok(
        timedOut.endedAt - timedOut.startedAt >= LOCK_TIMEOUT_MS * 0.9,
        `it waited ${timedOut.endedAt - timedOut.startedAt} ms, about the lock timeout`,
      );
    } finally {
      release();
      await holder;
    }
    const done = await ended(t, created.id);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    const failed = attempts.filter((a) => a.pipelineId === created.id && a.code === '55P03');
    const retried = attempts.find((a) => a.pipelineId === created.id && a.type === failed[0]!.type && a.startedAt > failed[0]!.endedAt && !a.code);
    assert.ok(retried, `${failed[0]!.type} ran again after its lock timeout and succeeded`);
    assert.equal(done.steps[0].charged, done.steps[0].price);
    assert.equal(before - (await creditsOf(tdb.db, t)), done.steps[0].price, 'the step is charged once');
  });
});

describe('a provider that returned fewer outputs than asked', () => {
  test('the step referencing the missing output fails, is never charged, and the pipeline fails naming it', async () => {
    const t = await createTenant(tdb.db, 1000);
    const before = await creditsOf(tdb.db, t);
    const still = imageStep('two lighthouses [outputs:1]');
    still.body.count = 2;
    const clip = videoStep();
    clip.body.start_frame_file_id = { from: 'still', output: 1 };
    const created = await create(t, [still, clip]);
    const done = await ended(t, created.id);
    assert.equal(done.status, 'failed');
    assert.equal(done.error.code, 'missing_step_output');
    assert.match(done.error.message, /step "clip"/);
    assert.match(done.error.message, /step "still" returned 1 output/);
    const [first, second] = done.steps;
    assert.equal(first.status, 'completed');
    assert.equal(first.outputs.length, 1, 'the provider returned one image of two');
    assert.equal(second.status, 'failed');
    assert.equal(second.error.code, 'missing_step_output');
    assert.equal(second.charged, 0, 'the failed step is never charged');
    assert.equal(second.refunded, 0);
    const jobs = await tdb.db.selectFrom('jobs').select('id').where('workspace_id', '=', t.workspaceId).execute();
    assert.equal(jobs.length, 1, 'no job was made for the failed step');
    assert.equal(before - (await creditsOf(tdb.db, t)), first.charged, 'only the first step is paid');
    // It failed at once: one attempt of the step's start, not retries until the give-up time.
    const starts = attempts.filter((a) => a.pipelineId === created.id && a.type === 'pipelineStartStep');
    assert.equal(starts.length, 2, 'one start per step');
  });
});
