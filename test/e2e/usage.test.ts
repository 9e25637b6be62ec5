// GET /v1/usage end to end over HTTP on the real stack: a workspace with jobs across 2 keys, 2
// projects and 3 models, some completed and some failed (and refunded) by the local renderer. Each
// grouping (none, key, project, model, kind, and all of them by hour) equals the workspace's ledger
// summed by SQL here, net to the credit: the balance is the grants minus the net. One job's refund
// is moved to the next day, so the money of a day (ledger time) and its job counts (creation time)
// differ as documented. The CSV answer holds the same rows as the JSON one; pages by cursor add up
// to the totals; bad parameters answer 400 in the error shape.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { MediaGenClient } from '@mediagen/client';
import { createTenant, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, assertApiError, creditsOf, startService, waitForJobStatus, type Gateway, type Service } from '../support/services.js';
import { createApiKey, createProject } from '../../db/repos/workspaces.js';

let svc: Service;
let tdb: TestDatabase;
let gw: Gateway;

before(async () => {
  svc = await startService({ LOCAL_RENDER_FAULTS: 'true', RATE_LIMIT_GENERATE_PER_MIN: '100000', RATE_LIMIT_POLL_PER_MIN: '100000' });
  ({ tdb, gw } = svc);
});

after(async () => {
  await svc?.close();
});

const DAY = 86_400_000;
const dayOf = (ms: number) => new Date(Math.floor(ms / DAY) * DAY);

interface Expected {
  period_start: string;
  key_id?: string | null;
  project_id?: string;
  model?: string;
  kind?: string;
  credits: { spent: number; refunded: number; net: number };
  jobs: { created: number; pending: number; generating: number; completed: number; failed: number };
}

const ISO = sql.lit('YYYY-MM-DD"T"HH24:MI:SS.000"Z"');
const columns = { key: 'api_key_id', project: 'project_id', model: 'model', kind: 'kind' } as const;
const fields = { key: 'key_id', project: 'project_id', model: 'model', kind: 'kind' } as const;
type Dim = keyof typeof columns;

/** The ledger and the jobs of the workspace, summed by SQL per bucket and group: what the API must answer. */
async function fromLedger(workspaceId: string, from: Date, to: Date, unit: 'day' | 'hour', dims: Dim[]): Promise<Expected[]> {
  const cols = dims.map((d) => sql.ref(`j.${columns[d]}`));
  const groupCols = cols.length ? sql`, ${sql.join(cols)}` : sql``;
  const money = await sql<any>`
    select to_char(date_trunc(${sql.lit(unit)}, l.created_at at time zone 'UTC'), ${ISO}) as b${groupCols},
           -sum(l.delta) filter (where l.delta < 0)::int as spent, coalesce(sum(l.delta) filter (where l.delta > 0), 0)::int as refunded
    from credit_ledger l join jobs j on j.id = l.job_id
    where l.workspace_id = ${workspaceId} and l.created_at >= ${from} and l.created_at < ${to}
    group by b${groupCols}`.execute(tdb.db);
  const counts = await sql<any>`
    select to_char(date_trunc(${sql.lit(unit)}, j.created_at at time zone 'UTC'), ${ISO}) as b${groupCols}, j.status, count(*)::int as n
    from jobs j where j.workspace_id = ${workspaceId} and j.created_at >= ${from} and j.created_at < ${to}
    group by b${groupCols}, j.status`.execute(tdb.db);
  const out = new Map<string, Expected>();
  const entry = (r: any) => {
    const start = r.b as string;
    const groups = Object.fromEntries(dims.map((d) => [fields[d], r[columns[d]] ?? null]));
    const k = JSON.stringify([start, ...dims.map((d) => r[columns[d]] ?? '')]);
    let e = out.get(k);
    if (!e) {
      e = {
        period_start: start,
        ...groups,
        credits: { spent: 0, refunded: 0, net: 0 },
        jobs: { created: 0, pending: 0, generating: 0, completed: 0, failed: 0 },
      };
      out.set(k, e);
    }
    return e;
  };
  for (const r of money.rows) {
    const e = entry(r);
    e.credits = { spent: r.spent ?? 0, refunded: r.refunded, net: (r.spent ?? 0) - r.refunded };
  }
  for (const r of counts.rows) {
    const e = entry(r);
    e.jobs[r.status as 'pending'] += r.n;
    e.jobs.created += r.n;
  }
  // The API's order: bucket, then each group's value ('' for none) byte-wise.
  const key = (e: Expected) => [e.period_start, ...dims.map((d) => (e[fields[d]] as string | null) ?? '')];
  return [...out.values()].sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return Buffer.compare(Buffer.from(x[i]!), Buffer.from(y[i]!));
    return 0;
  });
}

async function allPages(c: ReturnType<typeof api>, path: string, limit: number): Promise<{ rows: Expected[]; totals: any[] }> {
  const rows: Expected[] = [];
  const totals: any[] = [];
  let cursor: string | null = null;
  do {
    const r = await c.get(`${path}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.data.length <= limit);
    rows.push(...r.body.data);
    totals.push(r.body.totals);
    cursor = r.body.next_cursor;
  } while (cursor);
  return { rows, totals };
}

/** A CSV document as rows of fields (RFC 4180: quoted fields may hold commas, quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else field += ch;
  }
  assert.equal(field, '', 'the document ends with CRLF');
  return rows;
}

describe('GET /v1/usage', () => {
  let t: Tenant;
  let other: Tenant;
  let key2: string;
  let key2Id: string;
  let project2: string;
  const jobs: { id: string; path: string; fails: boolean }[] = [];
  let from: Date;
  let to: Date;
  let q: string;

  before(async () => {
    t = await createTenant(tdb.db, 10_000);
    other = await createTenant(tdb.db, 10_000);
    project2 = (await createProject(tdb.db, t.workspaceId, 'Second')).id;
    const k2 = await createApiKey(tdb.db, { workspaceId: t.workspaceId, name: 'second', actorEmail: t.ownerEmail });
    key2 = k2.key;
    key2Id = k2.id;
    const c1 = api(gw.baseUrl, t.apiKey);
    const c2 = api(gw.baseUrl, key2);
    // 2 keys × 2 projects × 3 models, completed and failed ([fail:terminal]: the renderer refuses; the charge is refunded).
    const creates: [ReturnType<typeof api>, string, string, Record<string, unknown>, boolean][] = [
      [c1, '/v1/images/generate', '/v1/images', { project_id: t.projectId, prompt: 'one', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 }, false],
      [
        c1,
        '/v1/images/generate',
        '/v1/images',
        { project_id: project2, prompt: 'two [fail:terminal]', model: 'seedream-4.5', aspect_ratio: '1:1', count: 1 },
        true,
      ],
      [c2, '/v1/images/generate', '/v1/images', { project_id: t.projectId, prompt: 'three', model: 'seedream-4.5', aspect_ratio: '1:1', count: 2 }, false],
      [
        c2,
        '/v1/images/generate',
        '/v1/images',
        { project_id: project2, prompt: 'four [fail:terminal]', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 },
        true,
      ],
      [c2, '/v1/videos/generate', '/v1/videos', { project_id: project2, prompt: 'five', model: 'sora-2', duration: 4 }, false],
    ];
    for (const [c, path, base, body, fails] of creates) {
      const r = await c.post(path, body);
      assert.equal(r.status, 200, r.text);
      jobs.push({ id: r.body.data.id, path: `${base}/${r.body.data.id}`, fails });
    }
    for (const j of jobs) assert.equal((await waitForJobStatus(c1, j.path, ['completed', 'failed'])).status, j.fails ? 'failed' : 'completed', j.id);
    // Job 1 (and its charge) a day back, job 2's refund a day after its charge: money by ledger time, counts by creation time.
    const back = sql`- interval '1 day'`;
    await sql`update jobs set created_at = created_at ${back} where id = ${jobs[0]!.id}`.execute(tdb.db);
    await sql`update credit_ledger set created_at = created_at ${back} where job_id = ${jobs[0]!.id}`.execute(tdb.db);
    await sql`update jobs set created_at = created_at ${back} where id = ${jobs[1]!.id}`.execute(tdb.db);
    await sql`update credit_ledger set created_at = created_at ${back} where job_id = ${jobs[1]!.id} and reason = 'charge'`.execute(tdb.db);
    // The other workspace's usage never shows.
    const r = await api(gw.baseUrl, other.apiKey).post('/v1/images/generate', {
      project_id: other.projectId,
      prompt: 'not yours',
      model: 'nano-banana-2',
      aspect_ratio: '1:1',
      count: 1,
    });
    assert.equal(r.status, 200, r.text);
    from = dayOf(Date.now() - 2 * DAY);
    to = dayOf(Date.now() + DAY);
    q = `/v1/usage?from=${from.toISOString()}&to=${to.toISOString()}`;
  });

  test('each grouping equals the ledger and the jobs summed by SQL; the net is what the balance lost', async () => {
    const c = api(gw.baseUrl, t.apiKey);
    const groupings: Dim[][] = [[], ['key'], ['project'], ['model'], ['kind'], ['key', 'project', 'model', 'kind']];
    for (const dims of groupings) {
      for (const unit of ['day', 'hour'] as const) {
        const path = `${q}&granularity=${unit}${dims.length ? `&group_by=${dims.join(',')}` : ''}`;
        const r = await c.get(path);
        assert.equal(r.status, 200, r.text);
        const expected = await fromLedger(t.workspaceId, from, to, unit, dims);
        assert.deepEqual(r.body.data, expected, `${path}: ${JSON.stringify(r.body.data)}`);
        assert.equal(r.body.next_cursor, null);
        assert.deepEqual(r.body.period, { from: from.toISOString(), to: to.toISOString(), granularity: unit });
        // The totals are the sum of the rows.
        const sum = (f: (e: Expected) => number) => expected.reduce((n, e) => n + f(e), 0);
        assert.deepEqual(r.body.totals, {
          credits: { spent: sum((e) => e.credits.spent), refunded: sum((e) => e.credits.refunded), net: sum((e) => e.credits.net) },
          jobs: {
            created: sum((e) => e.jobs.created),
            pending: sum((e) => e.jobs.pending),
            generating: sum((e) => e.jobs.generating),
            completed: sum((e) => e.jobs.completed),
            failed: sum((e) => e.jobs.failed),
          },
        });
      }
    }
    // Grouped by key and by model, both keys and all three models appear.
    const byKey = (await c.get(`${q}&group_by=key`)).body.data as Expected[];
    assert.deepEqual([...new Set(byKey.map((e) => e.key_id))].sort(), [t.apiKeyId, key2Id].sort());
    const byModel = (await c.get(`${q}&group_by=model`)).body.data as Expected[];
    assert.deepEqual([...new Set(byModel.map((e) => e.model))].sort(), ['nano-banana-2', 'seedream-4.5', 'sora-2']);
    // Net to the credit: the grants made the balance; the jobs' net took from it, exactly.
    const total = (await c.get(q)).body.totals;
    const grants = await sql<{ n: number }>`select sum(delta)::int as n from credit_ledger where workspace_id = ${t.workspaceId} and job_id is null`.execute(
      tdb.db,
    );
    assert.equal(await creditsOf(tdb.db, t), grants.rows[0]!.n - total.credits.net);
    assert.equal(total.jobs.created, jobs.length);
    assert.equal(total.jobs.failed, 2);
    assert.ok(total.credits.refunded > 0 && total.credits.spent > total.credits.refunded);
    // Money by ledger time, counts by creation time: the day-back job's refund is in today's money, its count in yesterday's.
    const days = (await c.get(q)).body.data as Expected[];
    const yesterday = dayOf(Date.now() - DAY).toISOString();
    const y = days.find((d) => d.period_start === yesterday)!;
    assert.equal(y.jobs.created, 2);
    assert.equal(y.credits.refunded, 0, 'the refund of the day-back failed job is not in its creation day');
  });

  test('pages by cursor hold every row once, each page carrying the totals of the whole range', async () => {
    const c = api(gw.baseUrl, t.apiKey);
    const path = `${q}&granularity=hour&group_by=model,key`;
    const whole = await c.get(path);
    const { rows, totals } = await allPages(c, path, 2);
    assert.ok(totals.length >= 3, 'several pages');
    assert.deepEqual(rows, whole.body.data);
    for (const tot of totals) assert.deepEqual(tot, whole.body.totals);
  });

  test('Accept: text/csv answers the same rows as CSV, paged by the Next-Cursor header', async () => {
    const c = api(gw.baseUrl, t.apiKey);
    const path = `${q}&group_by=project,key`;
    const json = (await c.get(path)).body.data as Expected[];
    const r = await c.call('GET', path, undefined, { accept: 'text/csv' });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/csv; charset=utf-8/);
    const [head, ...lines] = parseCsv(r.text);
    assert.deepEqual(head, [
      'period_start',
      'project_id',
      'key_id',
      'credits_spent',
      'credits_refunded',
      'credits_net',
      'jobs_created',
      'jobs_pending',
      'jobs_generating',
      'jobs_completed',
      'jobs_failed',
    ]);
    assert.deepEqual(
      lines,
      json.map((e) => [
        e.period_start,
        e.project_id!,
        e.key_id ?? '',
        ...[e.credits.spent, e.credits.refunded, e.credits.net, e.jobs.created, e.jobs.pending, e.jobs.generating, e.jobs.completed, e.jobs.failed].map(String),
      ]),
    );
    // Paged: the header row on every page, the next cursor in Next-Cursor.
    const csvRows: string[][] = [];
    let cursor: string | null = null;
    do {
      const p = await c.call('GET', `${path}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, undefined, { accept: 'text/csv' });
      const [h, ...body] = parseCsv(p.text);
      assert.deepEqual(h, head);
      csvRows.push(...body);
      cursor = p.headers.get('next-cursor');
    } while (cursor);
    assert.deepEqual(csvRows, lines);
  });

  test('the clients and the CLI answer the same report: mg.usage.get, mg.usage.csv over every page, mediagen usage --csv and --json', async () => {
    const c = api(gw.baseUrl, t.apiKey);
    const range = { from: from.toISOString(), to: to.toISOString() };
    const path = `${q}&group_by=model`;
    const json = (await c.get(path)).body;
    const csv = (await c.call('GET', path, undefined, { accept: 'text/csv' })).text;
    const mg = new MediaGenClient({ baseUrl: gw.baseUrl, apiKey: t.apiKey });
    assert.deepEqual(await mg.usage.get({ ...range, group_by: 'model' }), json);
    assert.equal(await mg.usage.csv({ ...range, group_by: 'model', limit: 1 }), csv, 'the pages joined under one header row');
    const cli = fileURLToPath(new URL('../../../client/bin/mediagen.js', import.meta.url));
    const env = { ...process.env, MEDIAGEN_API_KEY: t.apiKey, MEDIAGEN_BASE_URL: gw.baseUrl };
    const args = ['usage', '--from', range.from, '--to', range.to, '--group-by', 'model'];
    const run = promisify(execFile);
    assert.equal((await run(process.execPath, [cli, ...args, '--csv'], { env })).stdout, csv);
    const report = JSON.parse((await run(process.execPath, [cli, '--json', ...args], { env })).stdout);
    assert.deepEqual(report, { data: json.data, totals: json.totals, period: json.period });
  });

  test('the default range is the current UTC month; another workspace sees only its own usage', async () => {
    const now = new Date();
    const r = await api(gw.baseUrl, other.apiKey).get('/v1/usage');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.period, {
      from: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
      to: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
      granularity: 'day',
    });
    assert.equal(r.body.totals.jobs.created, 1);
  });

  test('bad parameters answer 400 in the error shape', async () => {
    const c = api(gw.baseUrl, t.apiKey);
    for (const bad of [
      'granularity=week',
      'group_by=key,colour',
      'group_by=',
      'from=2026-13-01',
      'from=2026-02-30',
      'from=yesterday',
      'from=2026-11-02&to=2026-11-01',
      'from=2026-11-01&to=2026-11-01',
      'from=2025-01-01&to=2026-01-03',
      'granularity=hour&from=2026-01-01&to=2026-02-02',
      'limit=0',
      'limit=101',
      'cursor=jobs.123.abc',
      'cursor=usage.x',
    ]) {
      assertApiError(await c.get(`/v1/usage?${bad}`), 400, 'invalid_request');
    }
    assertApiError(await api(gw.baseUrl).get('/v1/usage'), 401, 'unauthorized');
  });
});
