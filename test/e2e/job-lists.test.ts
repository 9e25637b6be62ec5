// Job lists end to end over HTTP on the real stack: GET /v1/jobs and the per-kind lists answer the
// key's workspace's jobs newest first, as the records GET /v1/{kind}/{id} answers, filtered and paged
// by cursor; 4xx in the error shape; another workspace's jobs never appear. The index test loads
// jobs with generate_series and reads the planner's choice (no timing asserted).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, type TestDatabase, type Tenant } from '../support/stack.js';
import { api, assertApiError, startService, waitForJobStatus, type Gateway, type Service } from '../support/services.js';
import { bulkInsertJobs, explainJobListPage } from '../support/job-rows.js';
import type { JobListOptions } from '../../db/repos/job-lists.js';
import { createProject } from '../../db/repos/workspaces.js';

let svc: Service;
let tdb: TestDatabase;
let gw: Gateway;

before(async () => {
  svc = await startService({ RATE_LIMIT_GENERATE_PER_MIN: '100000', RATE_LIMIT_POLL_PER_MIN: '100000' });
  ({ tdb, gw } = svc);
});

after(async () => {
  await svc?.close();
});

async function all(c: ReturnType<typeof api>, path: string, limit: number): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const r = await c.get(`${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.data.length <= limit);
    out.push(...r.body.data);
    cursor = r.body.next_cursor;
  } while (cursor);
  return out;
}

describe('job lists', () => {
  let t: Tenant;
  let other: Tenant;
  let secondProject: string;
  const created: { id: string; path: string; kind: string }[] = [];
  const T0 = Date.UTC(2026, 0, 1);

  before(async () => {
    t = await createTenant(tdb.db, 10_000);
    other = await createTenant(tdb.db, 10_000);
    secondProject = (await createProject(tdb.db, t.workspaceId, 'Second')).id;
    const c = api(gw.baseUrl, t.apiKey);
    const creates: [string, string, string, Record<string, unknown>][] = [
      ['image', '/v1/images/generate', '/v1/images', { project_id: t.projectId, prompt: 'one', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 }],
      ['video', '/v1/videos/generate', '/v1/videos', { project_id: t.projectId, prompt: 'two', model: 'sora-2', duration: 4 }],
      ['image', '/v1/images/generate', '/v1/images', { project_id: secondProject, prompt: 'three', model: 'seedream-4.5', aspect_ratio: '9:16', count: 1 }],
      ['video', '/v1/videos/generate', '/v1/videos', { project_id: secondProject, prompt: 'four', model: 'kling-2.6', duration: 5 }],
      ['image', '/v1/images/generate', '/v1/images', { project_id: t.projectId, prompt: 'five', model: 'nano-banana-2', aspect_ratio: '16:9', count: 2 }],
    ];
    for (const [kind, path, base, body] of creates) {
      const r = await c.post(path, body);
      assert.equal(r.status, 200, r.text);
      created.push({ id: r.body.data.id, path: `${base}/${r.body.data.id}`, kind });
    }
    // Known creation times, whole seconds apart; jobs 1 and 2 share theirs, so the id breaks the tie in
    // the order and the cursor.
    const seconds = [0, 1, 1, 2, 3];
    for (const [i, x] of created.entries()) {
      await tdb.db
        .updateTable('jobs')
        .set({ created_at: new Date(T0 + seconds[i]! * 1000) })
        .where('id', '=', x.id)
        .execute();
    }
    for (const x of created) await waitForJobStatus(c, x.path, ['completed', 'failed']);
    await api(gw.baseUrl, other.apiKey).post('/v1/images/generate', {
      project_id: other.projectId,
      prompt: 'not yours',
      model: 'nano-banana-2',
      aspect_ratio: '1:1',
      count: 1,
    });
  });

  test('GET /v1/jobs lists every kind newest first, each record the one GET answers plus kind, across pages', async () => {
    const c = api(gw.baseUrl, t.apiKey);
    const listed = await all(c, '/v1/jobs', 2);
    const rows = await tdb.db
      .selectFrom('jobs')
      .select(['id'])
      .where('workspace_id', '=', t.workspaceId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    assert.deepEqual(
      listed.map((j) => j.id),
      rows.map((r) => r.id),
    );
    assert.equal(listed.length, created.length);
    for (const job of listed) {
      const one = created.find((x) => x.id === job.id)!;
      const { kind, ...record } = job;
      assert.equal(kind, one.kind);
      const got = await c.get(one.path);
      // The job may have moved on between the two reads: compare what does not change.
      assert.deepEqual(
        Object.keys(record)
          .filter((k) => k !== 'progress')
          .sort(),
        Object.keys(got.body.data)
          .filter((k: string) => k !== 'progress')
          .sort(),
      );
      assert.equal(record.created_at, got.body.data.created_at);
      assert.equal(record.project_id, got.body.data.project_id);
    }
  });

  test('per-kind lists hold their kind only, with the same records', async () => {
    const c = api(gw.baseUrl, t.apiKey);
    const images = await all(c, '/v1/images', 1);
    assert.deepEqual(
      images.map((j) => j.id).sort(),
      created
        .filter((x) => x.kind === 'image')
        .map((x) => x.id)
        .sort(),
    );
    assert.ok(images.every((j) => j.kind === undefined && typeof j.prompt === 'string' && typeof j.count === 'number'));
    const videos = await all(c, '/v1/videos', 50);
    assert.deepEqual(
      videos.map((j) => j.id).sort(),
      created
        .filter((x) => x.kind === 'video')
        .map((x) => x.id)
        .sort(),
    );
    for (const path of ['/v1/replace-actors/generations', '/v1/talking-actors']) {
      const r = await c.get(path);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, { data: [], next_cursor: null });
    }
  });

  test('filters: project_id, status, model, created_after and created_before', async () => {
    const c = api(gw.baseUrl, t.apiKey);
    const ids = async (q: string) => (await all(c, `/v1/jobs?${q}`, 100)).map((j) => j.id).sort();
    assert.deepEqual(await ids(`project_id=${secondProject}`), [created[2]!.id, created[3]!.id].sort());
    assert.deepEqual(await ids('model=nano-banana-2'), [created[0]!.id, created[4]!.id].sort());
    // Every job has finished (before): fail one by hand so both statuses have members.
    await tdb.db.updateTable('jobs').set({ status: 'failed' }).where('id', '=', created[3]!.id).execute();
    assert.deepEqual(await ids('status=failed'), [created[3]!.id]);
    assert.deepEqual(
      await ids('status=completed'),
      created
        .filter((_, i) => i !== 3)
        .map((x) => x.id)
        .sort(),
    );
    assert.deepEqual(await ids('status=pending'), []);
    const mid = T0 + 1000; // jobs 1 and 2
    const sorted = (idx: number[]) => idx.map((i) => created[i]!.id).sort();
    assert.deepEqual(await ids(`created_after=${mid}`), sorted([3, 4]));
    assert.deepEqual(await ids(`created_before=${mid}`), sorted([0]));
    assert.deepEqual(await ids(`created_after=${T0}&created_before=${T0 + 2000}`), sorted([1, 2]));
    assert.deepEqual(await ids(`created_after=${mid}&created_before=${mid}`), []);
  });

  test("another workspace's jobs never appear, even by its project_id", async () => {
    const c = api(gw.baseUrl, other.apiKey);
    const listed = await all(c, '/v1/jobs', 50);
    assert.equal(listed.length, 1);
    assert.ok(!listed.some((j) => created.some((x) => x.id === j.id)));
    assert.deepEqual((await c.get(`/v1/jobs?project_id=${t.projectId}`)).body, { data: [], next_cursor: null });
    assert.deepEqual((await c.get(`/v1/images?project_id=${t.projectId}`)).body, { data: [], next_cursor: null });
  });

  test("4xx in the error shape: bad limit, status, dates, cursors (also another list's), no key; 405 on POST /v1/jobs", async () => {
    const c = api(gw.baseUrl, t.apiKey);
    assertApiError(await c.get('/v1/jobs?limit=0'), 400, 'invalid_request');
    assertApiError(await c.get('/v1/jobs?limit=101'), 400, 'invalid_request');
    assertApiError(await c.get('/v1/jobs?status=done'), 400, 'invalid_request');
    assertApiError(await c.get('/v1/jobs?created_after=yesterday'), 400, 'invalid_request');
    assertApiError(await c.get('/v1/jobs?created_before=-5'), 400, 'invalid_request');
    // Only a decimal numeral is a number: an empty value, hex, an exponent or a padded one is refused, not read as 0 or 16.
    for (const q of [
      'created_after=',
      'created_before=',
      'created_after=0x10',
      'created_after=1e3',
      'created_after=%207',
      'limit=',
      'limit=1e1',
      'created_after=1&created_after=2',
    ]) {
      assertApiError(await c.get(`/v1/talking-actors?${q}`), 400, 'invalid_request');
    }
    assertApiError(await c.get('/v1/jobs?cursor=garbage'), 400, 'invalid_request');
    const page = await c.get('/v1/images?limit=1');
    assert.match(page.body.next_cursor, /^images\.[0-9]+\.img_/);
    assertApiError(await c.get(`/v1/videos?cursor=${encodeURIComponent(page.body.next_cursor)}`), 400, 'invalid_request');
    assertApiError(await api(gw.baseUrl).get('/v1/jobs'), 401, 'unauthorized');
    const post = await c.post('/v1/jobs', {});
    assertApiError(post, 405, 'method_not_allowed');
    // The create path of replace-actors also lists: both methods are served.
    const options = await c.call('OPTIONS', '/v1/replace-actors/generations');
    assert.match(options.headers.get('allow') ?? '', /GET/);
    assert.match(options.headers.get('allow') ?? '', /POST/);
  });
});

describe('job list index', () => {
  test('with 100,000 jobs in one workspace every filter walks an index in its order and reads about what it returns', async () => {
    const t = await createTenant(tdb.db, 0);
    await bulkInsertJobs(tdb.db, t, 100_000);
    const limit = 51;
    const cases: [string, JobListOptions['filters'], RegExp][] = [
      ['no filter', undefined, /jobs_workspace_list_idx/],
      ['kind', { kind: 'video' }, /jobs_kind_list_idx/],
      ['status', { status: 'failed' }, /jobs_status_list_idx/],
      ['kind and status', { kind: 'image', status: 'pending' }, /jobs_kind_status_list_idx/],
      ['model', { model: 'sora-2' }, /jobs_model_list_idx/],
      ['a model that matches nothing', { model: 'veo-3.1' }, /jobs_model_list_idx/],
      ['a status that matches nothing', { kind: 'video', status: 'generating' }, /jobs_kind_status_list_idx/],
      ['status completed (most of the history)', { status: 'completed' }, /jobs_(status|workspace)_list_idx/],
      ['project', { projectId: t.projectId }, /jobs_(project|workspace)_list_idx/],
      ['created before, an hour back', { createdBefore: Date.now() - 3_600_000 }, /jobs_workspace_list_idx/],
    ];
    for (const [label, filters, index] of cases) {
      const plan = (await explainJobListPage(tdb.db, t.workspaceId, { limit, filters })).join('\n');
      assert.match(plan, new RegExp(`Index Scan Backward using ${index.source}`), `${label}: ${plan}`);
      assert.doesNotMatch(plan, /Seq Scan|Sort|Bitmap/, `${label}: ${plan}`);
      // Rows read and thrown away: at most about as many as the page returns.
      const removed = [...plan.matchAll(/Rows Removed by Filter: (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
      assert.ok(removed <= 2 * limit, `${label}: ${removed} rows read and filtered out\n${plan}`);
    }
  });
});
