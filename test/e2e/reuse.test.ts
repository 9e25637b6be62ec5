// Reuse of identical requests (docs/api/reuse.md) on the real stack: two gateways over HTTP, the
// workflows on Temporal, Postgres, MinIO, and the local fal queue (speaking fal's protocol) counting
// the submits by a prompt marker. Identical creates with `reuse: true` while one is in flight wait for
// it (one submit for all); after it completed they are answered from its outputs (no submit, their own
// copies, charged the reuse price); a different seed, `reuse: false` or another workspace generates
// again; a follower's cancel is its own; a source canceled, or whose outputs were deleted, is a miss.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, assertApiError, creditsOf, startGateway, type InProcessGateway as Gateway } from '../support/services.js';
import { falRequestsWith, startFailoverStack, type FailoverStack } from '../support/failover-stack.js';
import { imageBody, jobFinished, jobLedger, jobRow, uploadFile } from '../support/job-helpers.js';
import type { FakeFal } from '../support/fake-providers/fal.js';
import { createStorage, type Storage } from '../../shared/storage.js';
import { renderImage } from '../../activities/providers/local/media.js';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const adminJs = fileURLToPath(new URL('../../admin/main.js', import.meta.url));
/** The admin CLI as a process against the suite's database (no S3 or Temporal variables: nothing else is reached). */
const admin = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    execFile(process.execPath, [adminJs, ...args], { env: { PATH: process.env.PATH, DATABASE_URL: tdb.url }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });

let stack: FailoverStack;
let tdb: TestDatabase;
let fal: FakeFal;
let gw: Gateway;
let gw2: Gateway;
let storage: Storage;

const price = 4; // nano-banana-2, one image
const REUSE_PRICE = 1;
/** The fal queue keeps a request queued this many polls: long enough for followers to arrive and wait. */
const HELD = ['IN_QUEUE', 'IN_QUEUE', 'IN_QUEUE', 'IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'] as const;

before(async () => {
  stack = await startFailoverStack({ roles: 'workflows,io,fetch,provider:fal', env: { REUSE_PRICE_CREDITS: String(REUSE_PRICE) } });
  ({ tdb, fal, gw } = stack);
  gw2 = await startGateway(stack.config, tdb.db);
  storage = createStorage(stack.config);
});

after(async () => {
  await gw2?.close();
  await stack?.close();
});

const reuseBody = (t: Tenant, marker: string, more: Record<string, unknown> = {}) => ({ ...imageBody(t, `a lighthouse ${marker}`), reuse: true, ...more });

async function create(baseUrl: string, t: Tenant, body: Record<string, unknown>): Promise<string> {
  const r = await api(baseUrl, t.apiKey).post('/v1/images/generate', body);
  assert.equal(r.status, 200, r.text);
  return r.body.data.id as string;
}

const submits = (marker: string) => falRequestsWith(fal, 'submit', marker);
const record = async (t: Tenant, id: string) => (await api(gw.baseUrl, t.apiKey).get(`/v1/images/${id}`)).body.data;
const timelineTypes = async (t: Tenant, id: string) =>
  ((await api(gw.baseUrl, t.apiKey).get(`/v1/images/${id}/timeline`)).body.data.entries as { type: string }[]).map((e) => e.type);

/** A follower answered from `source`: completed, its own copy of each output in MinIO, charged the reuse price. */
async function assertAnsweredFrom(t: Tenant, id: string, source: string): Promise<void> {
  const row = await jobFinished(tdb.db, id);
  assert.equal(row.status, 'completed', JSON.stringify(row.error));
  assert.equal(row.reused_from, source);
  const src = await jobRow(tdb.db, source);
  assert.equal(row.outputs?.length, src.outputs?.length);
  for (const [i, o] of (row.outputs ?? []).entries()) {
    assert.notEqual(o.key, src.outputs![i]!.key, 'the follower has its own copy');
    assert.ok(o.key.includes(id), 'under its own media prefix');
    const stat = await storage.stat(o.key);
    assert.equal(stat?.size, src.outputs![i]!.size);
  }
  assert.deepEqual(await jobLedger(tdb.db, id), [
    ['charge', -price],
    ['refund', price - REUSE_PRICE],
  ]);
  const rec = await record(t, id);
  assert.equal(rec.reused_from, source);
  assert.deepEqual(rec.charges, { charged: price, refunded: price - REUSE_PRICE, net: REUSE_PRICE });
}

/** Uploads a PNG through the gateway: its id. */
const uploadImage = (t: Tenant, png: Buffer) => uploadFile(gw.baseUrl, t, png, 'image/png', 'frame.png');

describe('reuse of identical requests', () => {
  test('50 identical concurrent creates over two gateways make one provider submit; a repeat after completion makes none', async () => {
    fal.flow = HELD;
    const t = await createTenant(tdb.db, 1000);
    const marker = '[coalesce-50]';
    const ids = await Promise.all(Array.from({ length: 50 }, (_, i) => create(i % 2 ? gw2.baseUrl : gw.baseUrl, t, reuseBody(t, marker))));
    const rows = await Promise.all(ids.map((id) => jobFinished(tdb.db, id)));
    for (const r of rows) assert.equal(r.status, 'completed', JSON.stringify(r.error));
    assert.equal(submits(marker), 1, 'exactly one submit at the provider');
    const leaders = rows.filter((r) => r.reused_from === null);
    assert.equal(leaders.length, 1, 'one job generated, the others were answered from it');
    const leader = leaders[0]!;
    assert.deepEqual(await jobLedger(tdb.db, leader.id), [['charge', -price]]);
    for (const r of rows) if (r.id !== leader.id) await assertAnsweredFrom(t, r.id, leader.id);
    assert.equal(await creditsOf(tdb.db, t), 1000 - price - 49 * REUSE_PRICE);

    // The dry run says a create would be answered from the leader, at what price.
    const quote = await api(gw2.baseUrl, t.apiKey).post('/v1/images/generate?dry_run=true', reuseBody(t, marker));
    assert.equal(quote.status, 200, quote.text);
    assert.equal(quote.body.data.price, price);
    assert.deepEqual(quote.body.data.reuse, { source_job_id: leader.id, source_status: 'completed', price: REUSE_PRICE });

    // After completion: answered at once, no submit, the timeline says so.
    const repeat = await create(gw2.baseUrl, t, reuseBody(t, marker));
    await assertAnsweredFrom(t, repeat, leader.id);
    assert.equal(submits(marker), 1, 'a repeat after completion makes no submit');
    const types = await timelineTypes(t, repeat);
    assert.ok(types.includes('reused') && types.includes('refunded'), types.join(','));
  });

  test('a different seed, reuse: false, or another workspace generates again; a dry run without a source says null', async () => {
    fal.flow = ['COMPLETED'];
    const t = await createTenant(tdb.db, 1000);
    const other = await createTenant(tdb.db, 1000);
    const marker = '[reuse-misses]';
    const first = await create(gw.baseUrl, t, reuseBody(t, marker, { seed: 1 }));
    assert.equal((await jobFinished(tdb.db, first)).status, 'completed');
    assert.equal(submits(marker), 1);

    const quote = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate?dry_run=true', reuseBody(t, marker, { seed: 2 }));
    assert.equal(quote.body.data.reuse, null, 'no identical job: the create would generate');
    const noReuse = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate?dry_run=true', reuseBody(t, marker, { seed: 1, reuse: false }));
    assert.equal('reuse' in noReuse.body.data, false, 'a create that does not reuse: no reuse field');

    const seed2 = await create(gw.baseUrl, t, reuseBody(t, marker, { seed: 2 }));
    const optedOut = await create(gw2.baseUrl, t, reuseBody(t, marker, { seed: 1, reuse: false }));
    const otherWs = await create(gw2.baseUrl, other, reuseBody(other, marker, { seed: 1 }));
    for (const id of [seed2, optedOut, otherWs]) {
      const row = await jobFinished(tdb.db, id);
      assert.equal(row.status, 'completed', JSON.stringify(row.error));
      assert.equal(row.reused_from, null, `${id} generated itself`);
      assert.deepEqual(await jobLedger(tdb.db, id), [['charge', -price]]);
    }
    assert.equal(submits(marker), 4, 'each of the three made its own submit');
    assert.equal((await record(other, otherWs)).reused_from, undefined);
  });

  test('the workspace setting (admin CLI, audited) makes creates that leave reuse out reuse; reuse: false still generates', async () => {
    fal.flow = ['COMPLETED'];
    const t = await createTenant(tdb.db, 1000);
    const on = await admin('workspace', 'reuse-requests', '--workspace', t.workspaceId, '--json');
    assert.equal(on.code, 0, on.stderr);
    assert.deepEqual(JSON.parse(on.stdout), { workspace_id: t.workspaceId, reuse_requests: true });
    const audit = await tdb.db
      .selectFrom('audit_events')
      .select(['action', 'details'])
      .where('workspace_id', '=', t.workspaceId)
      .where('action', '=', 'workspace.reuse_changed')
      .execute();
    assert.deepEqual(
      audit.map((a) => [a.action, a.details]),
      [['workspace.reuse_changed', { reuse_requests: true, previous: false }]],
    );
    const marker = '[workspace-setting]';
    const body = imageBody(t, `a lighthouse ${marker}`);
    const first = await create(gw.baseUrl, t, body);
    assert.equal((await jobFinished(tdb.db, first)).status, 'completed');
    const second = await create(gw2.baseUrl, t, body);
    await assertAnsweredFrom(t, second, first);
    const optedOut = await jobFinished(tdb.db, await create(gw.baseUrl, t, { ...body, reuse: false }));
    assert.equal(optedOut.reused_from, null);
    assert.equal(submits(marker), 2);
  });

  test('inputs count by their content: the same file uploaded twice is reused, another file generates', async () => {
    fal.flow = ['COMPLETED'];
    const t = await createTenant(tdb.db, 10_000);
    const marker = '[inputs-by-content]';
    const [frameA, frameB] = await Promise.all(['a', 'b'].map((n) => renderImage({ prompt: `frame ${n}`, width: 320, height: 320 })));
    const a1 = await uploadImage(t, frameA!);
    const a2 = await uploadImage(t, frameA!);
    const b = await uploadImage(t, frameB!);
    const video = async (startFrame: string) => {
      const r = await api(gw2.baseUrl, t.apiKey).post('/v1/videos/generate', {
        project_id: t.projectId,
        prompt: `a paper boat sails ${marker}`,
        model: 'seedance-2.0',
        start_frame_file_id: startFrame,
        aspect_ratio: '9:16',
        duration: 6,
        resolution: '480p',
        reuse: true,
      });
      assert.equal(r.status, 200, r.text);
      return jobFinished(tdb.db, r.body.data.id as string);
    };
    const first = await video(a1);
    assert.equal(first.status, 'completed', JSON.stringify(first.error));
    const sameFile = await video(a2);
    assert.equal(sameFile.status, 'completed', JSON.stringify(sameFile.error));
    assert.equal(sameFile.reused_from, first.id, 'another upload of the same bytes is the same input');
    const otherFile = await video(b);
    assert.equal(otherFile.status, 'completed', JSON.stringify(otherFile.error));
    assert.equal(otherFile.reused_from, null, 'another start frame is another request');
    assert.equal(submits(marker), 2);
  });

  test("a follower's cancel is its own: the job it follows and the other follower go on", async () => {
    fal.flow = HELD;
    const t = await createTenant(tdb.db, 1000);
    const marker = '[follower-cancel]';
    const leader = await create(gw.baseUrl, t, reuseBody(t, marker));
    await waitFor('the leader to be submitted', () => submits(marker) === 1, 60_000);
    const [f1, f2] = [await create(gw2.baseUrl, t, reuseBody(t, marker)), await create(gw.baseUrl, t, reuseBody(t, marker))];
    for (const id of [f1, f2]) await waitFor(`${id} to follow the leader`, async () => (await jobRow(tdb.db, id)).reused_from === leader, 60_000);
    assert.equal((await record(t, f1)).reused_from, leader, 'a waiting follower names the job it waits for');

    const canceled = await api(gw2.baseUrl, t.apiKey).post(`/v1/images/${f1}/cancel`);
    assert.equal(canceled.status, 200, canceled.text);
    const f1Row = await jobFinished(tdb.db, f1);
    assert.equal(f1Row.status, 'failed');
    assert.equal(f1Row.error?.code, 'canceled');
    assert.deepEqual(await jobLedger(tdb.db, f1), [
      ['charge', -price],
      ['refund', price],
    ]);
    assert.equal((await jobRow(tdb.db, leader)).status !== 'failed', true, 'the leader was not canceled');

    assert.equal((await jobFinished(tdb.db, leader)).status, 'completed');
    await assertAnsweredFrom(t, f2, leader);
    assert.equal(submits(marker), 1);
  });

  test('the job followed is canceled: a follower takes the request over and generates it', async () => {
    fal.flow = HELD;
    const t = await createTenant(tdb.db, 1000);
    const marker = '[leader-cancel]';
    const leader = await create(gw.baseUrl, t, reuseBody(t, marker));
    await waitFor('the leader to be submitted', () => submits(marker) === 1, 60_000);
    const follower = await create(gw2.baseUrl, t, reuseBody(t, marker));
    await waitFor('the follower to follow', async () => (await jobRow(tdb.db, follower)).reused_from === leader, 60_000);

    fal.flow = ['COMPLETED'];
    assert.equal((await api(gw.baseUrl, t.apiKey).post(`/v1/images/${leader}/cancel`)).status, 200);
    const row = await jobFinished(tdb.db, follower);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(row.reused_from, null, 'it generated itself');
    assert.equal(submits(marker), 2);
    assert.deepEqual(await jobLedger(tdb.db, follower), [['charge', -price]]);
    const held = await tdb.db.selectFrom('reuse_sources').select('job_id').where('workspace_id', '=', t.workspaceId).execute();
    assert.deepEqual(
      held.map((h) => h.job_id),
      [follower],
      'the key is the follower’s now',
    );
  });

  test("a source whose outputs were deleted is a miss; a follower's copies outlive the source's delete", async () => {
    fal.flow = ['COMPLETED'];
    const t = await createTenant(tdb.db, 1000);
    const marker = '[deleted-source]';
    const source = await create(gw.baseUrl, t, reuseBody(t, marker));
    assert.equal((await jobFinished(tdb.db, source)).status, 'completed');
    const follower = await create(gw.baseUrl, t, reuseBody(t, marker));
    await assertAnsweredFrom(t, follower, source);

    const del = await api(gw.baseUrl, t.apiKey).call('DELETE', `/v1/images/${source}`);
    assert.equal(del.status, 200, del.text);
    const url = await api(gw2.baseUrl, t.apiKey).get(`/v1/images/${follower}/url`);
    assert.equal(url.status, 200, 'the follower keeps its own copy');
    const copy = await fetch(url.body.data.url);
    assert.equal(copy.status, 200);

    const after = await create(gw2.baseUrl, t, reuseBody(t, marker));
    const row = await jobFinished(tdb.db, after);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(row.reused_from, null, 'the deleted source was a miss');
    assert.equal(submits(marker), 2);
  });

  test('reuse is refused with URL inputs, in batch items and in pipeline steps, before any charge', async () => {
    const t = await createTenant(tdb.db, 100);
    const client = api(gw.baseUrl, t.apiKey);
    const urls = await client.post('/v1/replace-actors/generations', {
      project_id: t.projectId,
      image_url: 'https://example.com/a.png',
      video_url: 'https://example.com/a.mp4',
      reuse: true,
    });
    assertApiError(urls, 400, 'invalid_request');
    assert.match(urls.body.error.message, /reuse: image_url is a URL/);
    const { project_id: _q, ...itemBody } = reuseBody(t, 'x');
    const batch = await client.post('/v1/batches', { project_id: t.projectId, items: [{ custom_id: 'a', kind: 'image', body: itemBody }] });
    assertApiError(batch, 400, 'invalid_request');
    assert.match(batch.body.error.message, /items\[0\].*reuse: an item is never answered from an identical request/);
    const { project_id: _p, ...stepBody } = reuseBody(t, 'x');
    const pipeline = await client.post('/v1/pipelines', { project_id: t.projectId, steps: [{ id: 'still', kind: 'image', body: stepBody }] });
    assertApiError(pipeline, 400, 'invalid_request');
    assert.match(pipeline.body.error.message, /reuse: a step is never answered from an identical request/);
    assert.equal(await creditsOf(tdb.db, t), 100);
  });
});
