// Bulk actions on the real stack, over HTTP (gateway, the action's workflow on Temporal with its
// activity on the workflows worker, Postgres, MinIO): a bulk cancel of 300 queued jobs by filter
// refunds each exactly once (the ledger read by SQL) and writes one audit event, leaving another
// workspace's and another project's jobs alone; a retry by ids runs each failed job's request again
// as a new job charged once, skipping a canceled and a pending one; a delete removes finished jobs'
// outputs (their objects too) and skips one in flight; bad input is a 400 (or 404 for another
// workspace's job) in the error shape, a filter matching more jobs than an action takes is a 400
// too_many_jobs (and the same filter one job narrower cancels all it matches), and a key without the
// generate scope gets 403 key_scope_denied.
// The queued jobs are inserted through the job repository with no workflow, and no provider worker
// runs: nothing is generated, so the suite's time is the action's own.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTenant, insertImageJob, rawMinioClient, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, assertApiError, creditsOf, startService, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { ledgerCharges } from '../support/ledger.js';
import { failJob } from '../../jobs/index.js';
import { BULK_ACTION_MAX_JOBS } from '../../shared/bulk-actions.js';
import { jobPrefix } from '../../shared/storage.js';
import type { Config } from '../../shared/config.js';

let suite: Service;
let tdb: TestDatabase;
let config: Config;
let gw: Gateway;

before(async () => {
  // The workflows role alone: the action's run, and no provider worker (a retried job waits, never runs).
  suite = await startService({ RATE_LIMIT_GENERATE_PER_MIN: '10000', RATE_LIMIT_POLL_PER_MIN: '100000' }, { roles: 'workflows' });
  ({ tdb, config, gw } = suite);
});

after(async () => {
  await suite?.close();
});

async function actionOf(t: Tenant, id: string) {
  const r = await api(gw.baseUrl, t.apiKey).get(`/v1/bulk-actions/${id}`);
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

// A loaded CI machine may take a while over 300 Temporal cancels: the wait is generous, never a timed assertion.
const completed = (t: Tenant, id: string) =>
  waitFor(
    `bulk action ${id} to complete`,
    async () => {
      const a = await actionOf(t, id);
      return a.status === 'completed' ? a : undefined;
    },
    300_000,
  );

async function create(t: Tenant, body: unknown) {
  const r = await api(gw.baseUrl, t.apiKey).post('/v1/bulk-actions', body);
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

/** A job failed by the job service's own move (refunded), with `code`. */
async function failedJob(t: Tenant, code: string, prompt = `failed ${code}`) {
  const job = await insertImageJob(tdb.db, t, { prompt, price: 3 });
  await tdb.db.transaction().execute((tx) => failJob(tx, job.id, { code, message: `the job ${code}` }, null));
  return job;
}

const statusOf = async (id: string) => (await tdb.db.selectFrom('jobs').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;

describe('bulk cancel', () => {
  test('300 queued jobs by filter: each refunded exactly once, one audit event, other workspaces and projects untouched', async () => {
    const a = await createTenant(tdb.db, 1000);
    const b = await createTenant(tdb.db, 1000);
    const jobs = [];
    for (let i = 0; i < 300; i++) jobs.push(await insertImageJob(tdb.db, a, { prompt: `queued ${i}` }));
    // Same workspace, another project: outside the filter.
    const otherProject = (
      await tdb.db
        .insertInto('projects')
        .values({ id: `prj_other_${a.workspaceId}`, workspace_id: a.workspaceId, name: 'other' })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id;
    const outside = await insertImageJob(tdb.db, { ...a, projectId: otherProject });
    const bJobs = [await insertImageJob(tdb.db, b), await insertImageJob(tdb.db, b)];
    assert.equal(await creditsOf(tdb.db, a), 1000 - 301);
    const auditBefore = await tdb.db
      .selectFrom('audit_events')
      .select(sql<string>`count(*)::text`.as('n'))
      .where('workspace_id', '=', a.workspaceId)
      .executeTakeFirstOrThrow();

    const handle = await create(a, { action: 'cancel', filter: { project_id: a.projectId, status: 'pending', model: 'nano-banana-2', kind: 'image' } });
    assert.equal(handle.action, 'cancel');
    assert.equal(handle.job_count, 300);
    assert.equal(handle.counts.pending + handle.counts.done, 300);
    const done = await completed(a, handle.id);
    assert.deepEqual(done.counts, { pending: 0, done: 300, skipped: 0, failed: 0 });

    // The ledger, by SQL: every job one charge and exactly one refund of it.
    const ids = jobs.map((j) => j.id);
    const ledger = await sql<{ job_id: string; refunds: string; refunded: string; charged: string }>`
      select job_id, count(*) filter (where delta > 0)::text as refunds, coalesce(sum(delta) filter (where delta > 0), 0)::text as refunded,
             coalesce(-sum(delta) filter (where delta < 0), 0)::text as charged
      from credit_ledger where job_id = any(${ids}::text[]) group by job_id`.execute(tdb.db);
    assert.equal(ledger.rows.length, 300);
    for (const r of ledger.rows) assert.deepEqual([r.refunds, r.refunded, r.charged], ['1', '1', '1'], `job ${r.job_id}`);
    for (const id of ids.slice(0, 5)) assert.equal(await statusOf(id), 'failed');
    assert.equal(await creditsOf(tdb.db, a), 1000 - 1);

    // One audit event for the action, none per job.
    const events = await tdb.db.selectFrom('audit_events').selectAll().where('workspace_id', '=', a.workspaceId).orderBy('created_at').execute();
    assert.equal(events.length, Number(auditBefore.n) + 1);
    const ev = events.find((e) => e.action === 'bulk_action.created')!;
    assert.equal(ev.target_id, handle.id);
    assert.equal(ev.actor, `key:${a.apiKeyId}`);

    // Outside the filter and another workspace: still queued and charged.
    assert.equal(await statusOf(outside.id), 'pending');
    for (const j of bJobs) {
      assert.equal(await statusOf(j.id), 'pending');
      assert.deepEqual(await ledgerCharges(tdb.db, j.id), { charged: 1, refunded: 0, net: 1 });
    }
    assert.equal(await creditsOf(tdb.db, b), 998);

    // Listed, newest first; another workspace does not see it.
    const list = await api(gw.baseUrl, a.apiKey).get('/v1/bulk-actions');
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.data[0].id, handle.id);
    assertApiError(await api(gw.baseUrl, b.apiKey).get(`/v1/bulk-actions/${handle.id}`), 404, 'not_found');
    assert.deepEqual((await api(gw.baseUrl, b.apiKey).get('/v1/bulk-actions')).body.data, []);
  });
});

describe('bulk retry', () => {
  test('failed jobs by ids run again as new jobs charged once; a canceled and a pending one are skipped', async () => {
    const t = await createTenant(tdb.db, 1000);
    const f1 = await failedJob(t, 'generation_failed', 'a harbour at dawn');
    const f2 = await failedJob(t, 'provider_error', 'a lantern');
    const canceled = await failedJob(t, 'canceled');
    const pending = await insertImageJob(tdb.db, t);
    const handle = await create(t, { action: 'retry', ids: [f1.id, f2.id, canceled.id, pending.id] });
    assert.equal(handle.job_count, 4);
    const done = await completed(t, handle.id);
    assert.deepEqual(done.counts, { pending: 0, done: 2, skipped: 2, failed: 0 });

    const rows = await tdb.db.selectFrom('bulk_action_jobs').selectAll().where('bulk_action_id', '=', handle.id).execute();
    const by = new Map(rows.map((r) => [r.job_id, r]));
    assert.equal(by.get(canceled.id)!.reason, 'canceled jobs are not retried');
    assert.match(by.get(pending.id)!.reason!, /not failed/);
    for (const src of [f1, f2]) {
      const newId = by.get(src.id)!.result_job_id!;
      assert.ok(newId && newId !== src.id);
      const job = await tdb.db.selectFrom('jobs').selectAll().where('id', '=', newId).executeTakeFirstOrThrow();
      assert.equal(job.workspace_id, t.workspaceId);
      assert.equal(job.project_id, src.project_id);
      assert.equal(job.model, src.model);
      assert.equal((job.params as { prompt: string }).prompt, (src.params as { prompt: string }).prompt);
      assert.equal(job.api_key_id, t.apiKeyId);
      // Charged its price once, through the one job create; the failed source keeps its refund.
      assert.deepEqual(await ledgerCharges(tdb.db, newId), { charged: job.price, refunded: 0, net: job.price });
      assert.deepEqual(await ledgerCharges(tdb.db, src.id), { charged: 3, refunded: 3, net: 0 });
      assert.equal(await statusOf(src.id), 'failed');
    }
    // The skipped ones: unchanged.
    assert.equal(await statusOf(pending.id), 'pending');
    assert.equal(
      await tdb.db
        .selectFrom('jobs')
        .select(sql<string>`count(*)::text`.as('n'))
        .where('workspace_id', '=', t.workspaceId)
        .executeTakeFirstOrThrow()
        .then((r) => r.n),
      '6',
    );
  });
});

describe('bulk delete', () => {
  test("finished jobs' outputs are removed (objects too); a job in flight is skipped and keeps its objects", async () => {
    const t = await createTenant(tdb.db, 1000);
    const finished = [await failedJob(t, 'generation_failed'), await failedJob(t, 'provider_error')];
    const inFlight = await insertImageJob(tdb.db, t);
    const minio = rawMinioClient(config);
    for (const j of [...finished, inFlight]) await minio.putObject(config.S3_BUCKET, `${jobPrefix(j.id)}out.png`, Buffer.from('png'));
    const handle = await create(t, { action: 'delete', ids: [...finished.map((j) => j.id), inFlight.id] });
    const done = await completed(t, handle.id);
    assert.deepEqual(done.counts, { pending: 0, done: 2, skipped: 1, failed: 0 });
    const objects = async (id: string) => {
      const keys: string[] = [];
      for await (const o of minio.listObjectsV2(config.S3_BUCKET, jobPrefix(id), true)) keys.push((o as { name: string }).name);
      return keys;
    };
    for (const j of finished) {
      const row = await tdb.db.selectFrom('jobs').select(['outputs_removed_at']).where('id', '=', j.id).executeTakeFirstOrThrow();
      assert.ok(row.outputs_removed_at, `${j.id} marked removed`);
      assert.deepEqual(await objects(j.id), []);
    }
    assert.deepEqual(await objects(inFlight.id), [`${jobPrefix(inFlight.id)}out.png`]);
    const row = await tdb.db.selectFrom('jobs').select(['outputs_removed_at', 'status']).where('id', '=', inFlight.id).executeTakeFirstOrThrow();
    assert.deepEqual(row, { outputs_removed_at: null, status: 'pending' });
  });
});

describe('refusals', () => {
  test("bad input is a 400 in the error shape and creates nothing; another workspace's job is a 404", async () => {
    const t = await createTenant(tdb.db, 1000);
    const other = await createTenant(tdb.db, 1000);
    const theirs = await insertImageJob(tdb.db, other);
    const bad: unknown[] = [
      {},
      { action: 'cancel' },
      { action: 'explode', filter: {} },
      { action: 'cancel', filter: {}, ids: [theirs.id] },
      { action: 'cancel', ids: [] },
      { action: 'cancel', filter: { status: 'sleeping' } },
      { action: 'cancel', filter: { created_after: 'yesterday' } },
      { action: 'cancel', filter: { workspace_id: other.workspaceId } },
      { action: 'cancel', filter: { tag: 'not a tag!' } },
      { action: 'cancel', ids: Array.from({ length: 1001 }, (_, i) => `img_${i}`) },
      'cancel everything',
    ];
    for (const body of bad) assertApiError(await api(gw.baseUrl, t.apiKey).post('/v1/bulk-actions', body), 400, 'invalid_request');
    assertApiError(await api(gw.baseUrl, t.apiKey).post('/v1/bulk-actions', { action: 'cancel', ids: [theirs.id] }), 404, 'not_found');
    assert.equal(
      await tdb.db
        .selectFrom('bulk_actions')
        .select('id')
        .where('workspace_id', '=', t.workspaceId)
        .execute()
        .then((r) => r.length),
      0,
    );
    assert.equal(await statusOf(theirs.id), 'pending');
    assertApiError(await api(gw.baseUrl, t.apiKey).get('/v1/bulk-actions/bulk_nope'), 404, 'not_found');
  });

  test(`a filter matching more than ${BULK_ACTION_MAX_JOBS} jobs is a 400 too_many_jobs that touches none; narrowed to ${BULK_ACTION_MAX_JOBS}, all are canceled`, async () => {
    const t = await createTenant(tdb.db, 5000);
    // BULK_ACTION_MAX_JOBS + 1 queued jobs, each inserted with its charge by the job repository.
    const jobs = [];
    for (let i = 0; i <= BULK_ACTION_MAX_JOBS; i++) jobs.push(await insertImageJob(tdb.db, t, { prompt: `limit ${i}` }));
    const filter = { status: 'pending', kind: 'image' };
    const refused = await api(gw.baseUrl, t.apiKey).post('/v1/bulk-actions', { action: 'cancel', filter });
    assertApiError(refused, 400, 'too_many_jobs');
    assert.match(refused.body.error.message, new RegExp(`more than ${BULK_ACTION_MAX_JOBS} jobs`));
    assert.equal((await tdb.db.selectFrom('bulk_actions').select('id').where('workspace_id', '=', t.workspaceId).execute()).length, 0);
    const pending = () =>
      tdb.db
        .selectFrom('jobs')
        .select(sql<string>`count(*)::text`.as('n'))
        .where('workspace_id', '=', t.workspaceId)
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow()
        .then((r) => Number(r.n));
    assert.equal(await pending(), BULK_ACTION_MAX_JOBS + 1, 'the refusal touched no job');

    // One job fewer in the filter (the first, canceled on its own): the action takes all the rest.
    const one = await create(t, { action: 'cancel', ids: [jobs[0]!.id] });
    await completed(t, one.id);
    const handle = await create(t, { action: 'cancel', filter });
    assert.equal(handle.job_count, BULK_ACTION_MAX_JOBS);
    const done = await completed(t, handle.id);
    assert.deepEqual(done.counts, { pending: 0, done: BULK_ACTION_MAX_JOBS, skipped: 0, failed: 0 });
    assert.equal(await pending(), 0);
    assert.equal(await creditsOf(tdb.db, t), 5000, 'every job refunded');
  });

  test('a key without the generate scope gets 403 key_scope_denied', async () => {
    const t = await createTenant(tdb.db, 1000);
    const job = await insertImageJob(tdb.db, t);
    const minted = await api(gw.baseUrl, t.apiKey).post('/v1/api-keys', { name: 'reader', scopes: ['read'] });
    assert.equal(minted.status, 200, minted.text);
    const r = await api(gw.baseUrl, minted.body.data.key).post('/v1/bulk-actions', { action: 'cancel', ids: [job.id] });
    assert.equal(r.status, 403, r.text);
    assert.equal(r.body.error.code, 'key_scope_denied');
    assert.equal(r.body.rule, 'generate');
    assert.equal(await statusOf(job.id), 'pending');
    // Reading is the read scope's.
    assert.equal((await api(gw.baseUrl, minted.body.data.key).get('/v1/bulk-actions')).status, 200);
  });
});
