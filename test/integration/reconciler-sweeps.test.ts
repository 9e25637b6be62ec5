// The retention sweeps the reconciler role runs for the tables that grow with traffic (the outbox,
// idempotency keys, refused uploads, rate-limit rows, ended console sessions), on the real Postgres: each removes the rows
// past its retention and nothing younger, and the rate limiter writes a swept row again. The
// pipeline sweeps (stalled and unstarted pipelines) read only the pipelines in flight, by index.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, sql, type Compilable } from 'kysely';
import { createTenant, createTestDatabase, type Tenant, type TestDatabase } from '../support/stack.js';
import { sweepIdempotencyKeys } from '../../db/repos/idempotency.js';
import { sweepFailedUploads } from '../../db/repos/uploads.js';
import { sweepIdleRateLimits } from '../../db/repos/rate-limits.js';
import { sweepFinishedDeliveries } from '../../db/repos/webhooks.js';
import { sweepConsoleSessions } from '../../db/repos/console-sessions.js';
import { quietActivePipelines, quietActivePipelinesQuery, unstartedPipelines, unstartedPipelinesQuery } from '../../db/repos/pipelines.js';

let tdb: TestDatabase;
let t: Tenant;

before(async () => {
  tdb = await createTestDatabase();
  t = await createTenant(tdb.db, 100);
});

after(async () => {
  await tdb?.drop();
});

const ago = (hours: number) => sql<Date>`now() - make_interval(hours => ${hours})`;

describe('retention sweeps', () => {
  test('idempotency keys: gone after their 24 h window, in bounded batches; younger keys stay', async () => {
    for (const [key, hours] of [
      ['old-1', 30],
      ['old-2', 25],
      ['young', 1],
    ] as const) {
      await tdb.db
        .insertInto('idempotency_keys')
        .values({
          workspace_id: t.workspaceId,
          key,
          operation: 'POST /v1/images/generate',
          fingerprint: 'f',
          claim_token: 'c',
          status: 'completed',
          response_status: 200,
          response_body: '{}',
          created_at: ago(hours),
        })
        .execute();
    }
    assert.equal(await sweepIdempotencyKeys(tdb.db, 1), 1, 'one batch of one');
    assert.equal(await sweepIdempotencyKeys(tdb.db), 1);
    assert.equal(await sweepIdempotencyKeys(tdb.db), 0);
    const left = await tdb.db.selectFrom('idempotency_keys').select('key').execute();
    assert.deepEqual(
      left.map((r) => r.key),
      ['young'],
    );
  });

  test('refused uploads: gone after their retention; pending and completed uploads stay', async () => {
    const row = (id: string, status: 'failed' | 'pending' | 'completed', hoursAgo: number) => ({
      id,
      workspace_id: t.workspaceId,
      project_id: t.projectId,
      name: 'a.png',
      object_key: `uploads/${id}.png`,
      file_type: 'image' as const,
      mime_type: 'image/png',
      file_size: 10,
      status,
      updated_at: ago(hoursAgo),
    });
    await tdb.db
      .insertInto('file_uploads')
      .values([
        row('file_old_failed', 'failed', 24 * 8),
        row('file_new_failed', 'failed', 1),
        row('file_old_completed', 'completed', 24 * 30),
        row('file_old_pending', 'pending', 24 * 8),
      ])
      .execute();
    const removed = await sweepFailedUploads(tdb.db, new Date(Date.now() - 7 * 86_400_000));
    assert.equal(removed, 1);
    const left = await tdb.db.selectFrom('file_uploads').select('id').orderBy('id').execute();
    assert.deepEqual(
      left.map((r) => r.id),
      ['file_new_failed', 'file_old_completed', 'file_old_pending'],
    );
  });

  test('rate-limit rows: an idle row is swept, a row with a lease in its window stays, and the next lease writes it again', async () => {
    const lease = async (want: number) =>
      (
        await sql<{
          granted_tokens: number;
          used_tokens: number;
        }>`select * from rate_limit_lease(${t.apiKeyId}, 'generate', ${want}::integer, 30, 60000, 2000)`.execute(tdb.db)
      ).rows[0]!;
    assert.equal((await lease(4)).granted_tokens, 4);
    assert.equal(await sweepIdleRateLimits(tdb.db, 3_600_000), 0, 'a lease in its window keeps the row');
    // The row's only lease expired two hours ago: nothing in it counts any more.
    await sql`update rate_limits set lease_expires = array[now() - interval '2 hours'] where api_key_id = ${t.apiKeyId}`.execute(tdb.db);
    assert.equal(await sweepIdleRateLimits(tdb.db, 3_600_000), 1);
    assert.equal((await tdb.db.selectFrom('rate_limits').selectAll().execute()).length, 0);
    const next = await lease(1);
    assert.deepEqual([next.granted_tokens, next.used_tokens], [1, 1], 'a fresh budget, recorded in a new row');
    assert.equal((await tdb.db.selectFrom('rate_limits').selectAll().execute()).length, 1);
  });

  test('console sessions: those past their expiry go, oldest first in bounded batches; live sessions stay', async () => {
    const hours = (h: number) => new Date(Date.now() + h * 3_600_000);
    for (const [id, expires] of [
      ['sha256:ended-long-ago', hours(-48)],
      ['sha256:ended-just-now', hours(-0.01)],
      ['sha256:live', hours(8)],
    ] as const) {
      await tdb.db.insertInto('console_sessions').values({ id_hash: id, api_key_id: t.apiKeyId, expires_at: expires }).execute();
    }
    assert.equal(await sweepConsoleSessions(tdb.db, new Date(), 1), 1, 'one batch of one');
    const afterOne = await tdb.db.selectFrom('console_sessions').select('id_hash').orderBy('id_hash').execute();
    assert.deepEqual(
      afterOne.map((r) => r.id_hash),
      ['sha256:ended-just-now', 'sha256:live'],
      'the oldest expiry went first',
    );
    assert.equal(await sweepConsoleSessions(tdb.db), 1);
    assert.equal(await sweepConsoleSessions(tdb.db), 0);
    const left = await tdb.db.selectFrom('console_sessions').select('id_hash').execute();
    assert.deepEqual(
      left.map((r) => r.id_hash),
      ['sha256:live'],
    );
  });

  test('the webhook outbox: finished events past their retention go, events still being delivered stay', async () => {
    const job = await sql<{ id: string }>`
      insert into jobs (id, kind, workspace_id, project_id, model, status, params, price)
      values ('img_outbox', 'image', ${t.workspaceId}, ${t.projectId}, 'nano-banana-2', 'completed', '{}', 0) returning id`.execute(tdb.db);
    const jobId = job.rows[0]!.id;
    const event = (id: string, daysAgo: number, finished: boolean) => ({
      id,
      job_id: jobId,
      workspace_id: t.workspaceId,
      type: 'job.completed',
      url: 'https://hooks.example.com/x',
      job: '{}',
      created_at: sql<Date>`now() - make_interval(days => ${daysAgo})`,
      delivered_at: finished ? sql<Date>`now()` : null,
    });
    await tdb.db
      .insertInto('webhook_deliveries')
      .values([event('whk_old_done', 8, true), event('whk_old_retrying', 8, false), event('whk_new_done', 1, true)])
      .execute();
    assert.equal(await sweepFinishedDeliveries(tdb.db, new Date(Date.now() - 7 * 86_400_000)), 1);
    const left = await tdb.db.selectFrom('webhook_deliveries').select('id').orderBy('id').execute();
    assert.deepEqual(
      left.map((r) => r.id),
      ['whk_new_done', 'whk_old_retrying'],
    );
  });
});

describe("the reconciler's pipeline sweeps", () => {
  test('read only the pipelines in flight, by index, among 20,000 finished ones: the quiet ones by last move, the unstarted by age', async () => {
    const p = await createTenant(tdb.db, 100);
    await sql`
      insert into pipelines (id, workspace_id, project_id, status, price, workflow_started, created_at, updated_at)
      select 'pl_done_' || g, ${p.workspaceId}, ${p.projectId}, 'completed', 1, true, now() - interval '2 days', now() - interval '2 days'
      from generate_series(1, 20000) g`.execute(tdb.db);
    for (const [id, status, started, movedHoursAgo] of [
      ['pl_quiet', 'running', true, 2],
      ['pl_unstarted', 'pending', false, 1],
      ['pl_busy', 'running', true, 0],
    ] as const) {
      await tdb.db
        .insertInto('pipelines')
        .values({
          id,
          workspace_id: p.workspaceId,
          project_id: p.projectId,
          status,
          price: 1,
          workflow_started: started,
          created_at: ago(movedHoursAgo),
          updated_at: ago(movedHoursAgo),
        })
        .execute();
    }
    await sql`analyze pipelines`.execute(tdb.db);
    const before = new Date(Date.now() - 10 * 60_000);

    assert.deepEqual(
      (await quietActivePipelines(tdb.db, before, 10)).map((r) => r.id),
      ['pl_quiet', 'pl_unstarted'],
    );
    assert.deepEqual(
      (await unstartedPipelines(tdb.db, before, 10)).map((r) => r.id),
      ['pl_unstarted'],
    );
    for (const [query, index] of [
      [quietActivePipelinesQuery(tdb.db, before, 10), 'pipelines_quiet_idx'],
      [unstartedPipelinesQuery(tdb.db, before, 10), 'pipelines_unstarted_idx'],
    ] as const) {
      const plan = await explain(query);
      assert.match(plan, new RegExp(`Index Scan using ${index}`), plan);
      assert.doesNotMatch(plan, /Seq Scan/, plan);
    }
  });
});

/** The EXPLAIN (ANALYZE) plan of a query exactly as the repo sends it. */
async function explain(query: Compilable): Promise<string> {
  const c = query.compile();
  const r = await tdb.db.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain (analyze) ${c.sql}`, [...c.parameters]));
  return r.rows.map((row) => row['QUERY PLAN']).join('\n');
}
