// GET /v1/projects, /v1/actors, /v1/voices: shapes, stable keyset pagination, filters, validation.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, createTenant, type TestDatabase, type Tenant } from '../support/stack.js';
import { call, insertCatalog, startInProcessGateway, type Gateway } from './gateway-harness.js';

async function walk(gw: Gateway, key: string, path: string, limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const res = await call(gw.baseUrl, 'GET', `${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key });
    assert.equal(res.status, 200, res.text);
    assert.ok(Array.isArray(res.body.data));
    assert.ok(res.body.data.length <= limit);
    assert.ok('next_cursor' in res.body);
    ids.push(...res.body.data.map((r: { id: string }) => r.id));
    cursor = res.body.next_cursor;
    if (cursor !== null) {
      assert.equal(typeof cursor, 'string');
      assert.equal(res.body.data.length, limit, 'a page followed by another one is full');
    }
    pages++;
    assert.ok(pages < 1000);
  } while (cursor !== null);
  return { ids, pages };
}

describe('gateway discovery', () => {
  let tdb: TestDatabase;
  let gw: Gateway;
  let t: Tenant;
  const poll = { RATE_LIMIT_POLL_PER_MIN: '100000' };

  before(async () => {
    tdb = await createTestDatabase();
    gw = await startInProcessGateway(tdb.db, tdb.url, poll);
    t = await createTenant(tdb.db);
    await insertCatalog(tdb.db, 105);
  });

  after(async () => {
    await gw?.close();
    await tdb?.drop();
  });

  test('actors: every field of the Actor record with the right types, URLs under /media', async () => {
    const res = await call(gw.baseUrl, 'GET', '/v1/actors?limit=8', { key: t.apiKey });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.length, 8);
    for (const a of res.body.data) {
      assert.deepEqual(Object.keys(a).sort(), [
        'age',
        'default_voice_id',
        'gender',
        'id',
        'is_pro',
        'name',
        'preview_thumbnail_url',
        'preview_video_url',
        'reference_image_url',
        'skin_tone',
      ]);
      for (const f of ['id', 'name', 'age', 'gender', 'skin_tone']) assert.equal(typeof a[f], 'string', f);
      assert.equal(typeof a.is_pro, 'boolean');
      assert.ok(a.default_voice_id === null || typeof a.default_voice_id === 'string');
      const row = await tdb.db.selectFrom('actors').selectAll().where('id', '=', a.id).executeTakeFirstOrThrow();
      assert.equal(a.reference_image_url, `${gw.baseUrl}/media/${row.reference_image_key}`);
      assert.equal(a.preview_video_url, `${gw.baseUrl}/media/${row.preview_video_key}`);
      assert.equal(a.preview_thumbnail_url, `${gw.baseUrl}/media/${row.preview_thumbnail_key}`);
      assert.equal(a.default_voice_id, row.default_voice_id);
      assert.equal(a.is_pro, row.is_pro);
    }
    assert.ok(res.body.data.some((a: { default_voice_id: string | null }) => a.default_voice_id === null));
  });

  test('voices: the DESIGN voice record', async () => {
    const res = await call(gw.baseUrl, 'GET', '/v1/voices?limit=3', { key: t.apiKey });
    assert.equal(res.status, 200);
    for (const v of res.body.data) {
      assert.deepEqual(Object.keys(v).sort(), ['accent', 'gender', 'id', 'language', 'name', 'preview_url']);
      for (const f of Object.keys(v)) assert.equal(typeof v[f], 'string', f);
      const row = await tdb.db.selectFrom('voices').select('preview_key').where('id', '=', v.id).executeTakeFirstOrThrow();
      assert.equal(v.preview_url, `${gw.baseUrl}/media/${row.preview_key}`);
    }
  });

  test('projects: the DESIGN project record with millisecond timestamps', async () => {
    const res = await call(gw.baseUrl, 'GET', '/v1/projects', { key: t.apiKey });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.length, 1);
    const p = res.body.data[0];
    assert.deepEqual(Object.keys(p).sort(), ['created_at', 'id', 'name', 'updated_at', 'workspace_id']);
    assert.equal(p.id, t.projectId);
    assert.equal(p.workspace_id, t.workspaceId);
    assert.ok(Number.isInteger(p.created_at) && Math.abs(Date.now() - p.created_at) < 600_000);
    assert.ok(Number.isInteger(p.updated_at));
    assert.equal(res.body.next_cursor, null);
  });

  test('default page is 50, the largest 100; next_cursor is null at the end', async () => {
    const total = (
      await tdb.db
        .selectFrom('actors')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n;
    const def = await call(gw.baseUrl, 'GET', '/v1/actors', { key: t.apiKey });
    assert.equal(def.body.data.length, Math.min(50, Number(total)));
    assert.equal(typeof def.body.next_cursor, 'string');
    const max = await call(gw.baseUrl, 'GET', '/v1/voices?limit=100', { key: t.apiKey });
    assert.equal(max.body.data.length, 100);
    const rest = await call(gw.baseUrl, 'GET', `/v1/voices?limit=100&cursor=${max.body.next_cursor}`, { key: t.apiKey });
    assert.ok(rest.body.data.length >= 5);
    assert.equal(rest.body.next_cursor, null);
  });

  test('walking actors and voices page by page gives every row once, ordered by (sort_key, id)', async () => {
    for (const [path, table] of [
      ['/v1/actors', 'actors'],
      ['/v1/voices', 'voices'],
    ] as const) {
      const expected = (await tdb.db.selectFrom(table).select('id').orderBy('sort_key').orderBy('id').execute()).map((r) => r.id);
      for (const limit of [1, 7, 50]) {
        const { ids } = await walk(gw, t.apiKey, path, limit);
        assert.deepEqual(ids, expected, `${path} limit=${limit}`);
      }
    }
  });

  test('walking projects is stable, even for rows created in the same instant', async () => {
    // One statement: every row gets the same created_at, so only the id orders them.
    const ids = Array.from({ length: 5 }, (_, i) => `prj_same_instant_${i}`);
    await tdb.db
      .insertInto('projects')
      .values(ids.map((id) => ({ id, workspace_id: t.workspaceId, name: id })))
      .execute();
    const expected = (
      await tdb.db.selectFrom('projects').select('id').where('workspace_id', '=', t.workspaceId).orderBy('created_at').orderBy('id').execute()
    ).map((r) => r.id);
    assert.equal(expected.length, 6);
    for (const limit of [1, 2, 4]) assert.deepEqual((await walk(gw, t.apiKey, '/v1/projects', limit)).ids, expected);
  });

  test('actor filters: gender, age, skin_tone, is_pro (combined with pagination)', async () => {
    const cases: Array<[string, (a: any) => boolean]> = [
      ['gender=female', (a) => a.gender === 'female'],
      ['age=young_adult&is_pro=true', (a) => a.age === 'young_adult' && a.is_pro === true],
      ['skin_tone=medium_dark&is_pro=false', (a) => a.skin_tone === 'medium_dark' && a.is_pro === false],
      ['gender=non_binary&age=adult&skin_tone=light', (a) => a.gender === 'non_binary' && a.age === 'adult' && a.skin_tone === 'light'],
    ];
    const allRows = await tdb.db.selectFrom('actors').selectAll().orderBy('sort_key').orderBy('id').execute();
    for (const [query, matches] of cases) {
      const expected = allRows.filter((r) => matches({ ...r })).map((r) => r.id);
      assert.ok(expected.length > 0, `${query} matches some rows`);
      const { ids } = await walk(gw, t.apiKey, `/v1/actors?${query}`, 3);
      assert.deepEqual(ids, expected, query);
    }
  });

  test('invalid filters and page parameters → 400 invalid_request naming the field and the allowed values', async () => {
    const cases: Array<[string, RegExp]> = [
      ['/v1/actors?gender=robot', /gender.*female.*male.*non_binary/],
      ['/v1/actors?age=old', /age.*young_adult.*adult.*middle_aged.*senior/],
      ['/v1/actors?skin_tone=blue', /skin_tone.*light.*medium_light.*medium.*medium_dark.*dark/],
      ['/v1/actors?is_pro=yes', /is_pro.*true.*false/],
      ['/v1/actors?gender=female&gender=male', /gender/],
      ['/v1/actors?limit=0', /limit/],
      ['/v1/voices?limit=101', /limit/],
      ['/v1/projects?limit=abc', /limit/],
      ['/v1/projects?limit=1.5', /limit/],
      ['/v1/projects?cursor=%%%', /cursor/],
      ['/v1/voices?cursor=bm90LWEtY3Vyc29y', /cursor/],
    ];
    for (const [path, message] of cases) {
      const res = await call(gw.baseUrl, 'GET', path, { key: t.apiKey });
      assert.equal(res.status, 400, `${path}: ${res.text}`);
      assert.equal(res.body.error.code, 'invalid_request', path);
      assert.match(res.body.error.message, message, path);
    }
  });

  test('a cursor of one list is refused by another', async () => {
    const actors = await call(gw.baseUrl, 'GET', '/v1/actors?limit=1', { key: t.apiKey });
    const res = await call(gw.baseUrl, 'GET', `/v1/voices?cursor=${actors.body.next_cursor}`, { key: t.apiKey });
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /cursor/);
  });

  test('wrong method on a discovery path → 405 method_not_allowed with Allow', async () => {
    for (const method of ['POST', 'DELETE', 'PUT']) {
      const res = await call(gw.baseUrl, method, '/v1/actors', { key: t.apiKey });
      assert.equal(res.status, 405, res.text);
      assert.equal(res.body.error.code, 'method_not_allowed');
      assert.equal(res.headers.get('allow'), 'GET, HEAD');
    }
  });

  test('media URLs use PUBLIC_BASE_URL when it is configured', async () => {
    const pub = await startInProcessGateway(tdb.db, tdb.url, { ...poll, PUBLIC_BASE_URL: 'https://media.example.test' });
    try {
      const actors = await call(pub.baseUrl, 'GET', '/v1/actors?limit=1', { key: t.apiKey });
      assert.match(actors.body.data[0].reference_image_url, /^https:\/\/media\.example\.test\/media\/catalog\/actors\//);
      const voices = await call(pub.baseUrl, 'GET', '/v1/voices?limit=1', { key: t.apiKey });
      assert.match(voices.body.data[0].preview_url, /^https:\/\/media\.example\.test\/media\//);
    } finally {
      await pub.close();
    }
  });
});
