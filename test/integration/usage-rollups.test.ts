// GET /v1/usage from the daily rollups (0076_usage_daily) answers exactly what the raw aggregation
// of the ledger and the jobs answers, page by page, whatever the range and grouping: over a varied
// history written straight to Postgres (three workspaces, two keys and a job without one, two
// projects, several models and kinds, jobs created on both sides of UTC midnight, charges,
// recharges, zero-credit charges, refunds on later days, grants that are not usage, status moves
// after the fact, a job whose key is gone, ledger rows edited and removed by hand, deleted jobs), with part of it folded into usage_daily and the rest
// still in usage_deltas, then all folded, then rebuilt by the migration's backfill. Ranges start and
// end on midnights, mid-day (to the millisecond) and inside one day; every grouping; pages of 3, 97
// and 500 rows followed by cursor.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import { createTenant, createTestDatabase, insertImageJob, type Tenant, type TestDatabase } from '../support/stack.js';
import { createApiKey, createProject } from '../../db/repos/workspaces.js';
import { foldUsageDeltas, usagePage, usageSources, type UsageDimension, type UsagePage, type UsageQuery } from '../../db/repos/usage.js';
import * as rollups from '../../db/migrations/0076_usage_daily.js';

const DAY = 86_400_000;
const T0 = Date.parse('2026-03-01T00:00:00Z');
const dims: UsageDimension[] = ['key', 'project', 'model', 'kind'];
const groupings: UsageDimension[][] = Array.from({ length: 16 }, (_, m) => dims.filter((_, i) => m & (1 << i)));

/** A deterministic generator (mulberry32), so a failure names a fixture that can be read again. */
function prng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe('usage from the daily rollups', () => {
  let tdb: TestDatabase;
  const tenants: Tenant[] = [];
  let jobIds: string[] = [];
  const rnd = prng(50);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;

  /** `n` jobs of `t` around the days after T0, each charged at creation; some move on, fail and are refunded later. */
  async function history(t: Tenant, n: number, prefix: string) {
    const template = await insertImageJob(tdb.db, t);
    const project2 = await createProject(tdb.db, t.workspaceId, 'second');
    const key2 = await createApiKey(tdb.db, { workspaceId: t.workspaceId, name: 'second', actorEmail: t.ownerEmail });
    const rows = Array.from({ length: n }, (_, i) => {
      // Mostly within seconds of a midnight, on either side, over ten days; the rest anywhere in the day.
      const day = T0 + Math.floor(rnd() * 10) * DAY;
      const at = rnd() < 0.6 ? day + Math.floor((rnd() - 0.5) * 20_000) : day + Math.floor(rnd() * DAY);
      return {
        id: `${prefix}_${i}`,
        at: new Date(at).toISOString(),
        key: pick([t.apiKeyId, key2.id, null]),
        project: pick([t.projectId, project2.id]),
        model: pick(['nano-banana-2', 'seedream-4.5', 'sora-2', 'veo-3']),
        kind: pick(['image', 'video', 'talking_actor']),
        price: pick([0, 1, 3, 10]),
      };
    });
    await sql`
      insert into jobs
      select (jsonb_populate_record(null::jobs, to_jsonb(j) || jsonb_build_object(
               'id', r.id, 'created_at', r.at, 'api_key_id', r.key, 'project_id', r.project, 'model', r.model, 'kind', r.kind, 'price', r.price))).*
      from jobs j, jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(id text, at timestamptz, key text, project text, model text, kind text, price int)
      where j.id = ${template.id}`.execute(tdb.db);
    await sql`
      insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason, created_at)
      select workspace_id, id, 1, -price, 'charge', created_at + interval '5 milliseconds' from jobs where id like ${`${prefix}\\_%`}`.execute(tdb.db);
    await sql`insert into credit_ledger (workspace_id, delta, reason, note, created_at) values (${t.workspaceId}, 500, 'grant', 'not usage', ${new Date(T0 + DAY / 2)})`.execute(
      tdb.db,
    );
    return rows.map((r) => r.id);
  }

  /** Moves some jobs on: generating, completed or failed and refunded (some hours or days later), some recharged. */
  async function moveOn(ids: string[]) {
    for (const id of ids) {
      const roll = rnd();
      if (roll < 0.2) continue;
      await sql`update jobs set status = 'generating' where id = ${id}`.execute(tdb.db);
      if (roll < 0.4) continue;
      if (roll < 0.75) {
        await sql`update jobs set status = 'completed' where id = ${id}`.execute(tdb.db);
        if (roll < 0.5) {
          await sql`insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason, created_at)
                    select workspace_id, id, 2, -2, 'recharge', created_at + interval '1 hour' from jobs where id = ${id}`.execute(tdb.db);
        }
        continue;
      }
      await sql`update jobs set status = 'failed' where id = ${id}`.execute(tdb.db);
      const later = pick(['10 seconds', '3 hours', '2 days']);
      await sql`insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason, created_at)
                select workspace_id, id, 3, price, 'refund', created_at + ${later}::interval from jobs where id = ${id}`.execute(tdb.db);
    }
  }

  before(async () => {
    tdb = await createTestDatabase();
    for (let i = 0; i < 3; i++) tenants.push(await createTenant(tdb.db));
    for (const [i, t] of tenants.entries()) jobIds.push(...(await history(t, [400, 150, 40][i]!, `w${i}`)));
    await moveOn(jobIds.filter((_, i) => i % 2 === 0));
    // Half the history folded into usage_daily; the rest, and what follows, still in the deltas.
    assert.ok((await foldUsageDeltas(tdb.db)) > 0);
    await moveOn(jobIds.filter((_, i) => i % 2 === 1));
    // Jobs that move again after the fold (an operator's reset: failed → generating → completed).
    const failed = await sql<{ id: string }>`select id from jobs where status = 'failed' and id like 'w0\\_%' order by id limit 10`.execute(tdb.db);
    for (const { id } of failed.rows) {
      await sql`update jobs set status = 'generating' where id = ${id}`.execute(tdb.db);
      await sql`update jobs set status = 'completed' where id = ${id}`.execute(tdb.db);
    }
    // A key that is gone: its jobs (and their ledger sums) are the key-less group's now.
    await sql`update jobs set api_key_id = null where api_key_id = ${tenants[1]!.apiKeyId}`.execute(tdb.db);
    // Hand edits by the owner, which the service never makes: ledger rows moved a day back or
    // removed, jobs deleted (their ledger rows with them).
    await sql`update credit_ledger set created_at = created_at - interval '1 day' where job_id in ('w0_1', 'w0_2', 'w0_3', 'w1_4')`.execute(tdb.db);
    await sql`delete from credit_ledger where job_id in ('w0_5', 'w0_6') and job_seq = 1`.execute(tdb.db);
    await sql`delete from jobs where id in ('w0_7', 'w1_8', 'w2_9')`.execute(tdb.db);
    jobIds = [];
  });

  after(async () => {
    await tdb?.drop();
  });

  /** Every page of a query, followed by cursor. */
  async function pages(q: UsageQuery, raw: boolean): Promise<UsagePage[]> {
    const out: UsagePage[] = [];
    let after: UsageQuery['after'] = null;
    for (let i = 0; i < 1000; i++) {
      const page = await usagePage(tdb.db, { ...q, after }, { raw });
      out.push(page);
      if (!page.next) return out;
      after = page.next;
    }
    throw new Error('more than 1000 pages');
  }

  const iso = (ms: number) => new Date(ms);
  const ranges: [string, Date, Date][] = [
    ['whole days', iso(T0 - DAY), iso(T0 + 12 * DAY)],
    ['a year by day, on midnights', iso(T0 - 60 * DAY), iso(T0 + 300 * DAY)],
    ['mid-day to mid-day', iso(T0 + 7_654_321), iso(T0 + 6 * DAY + 43_210_987)],
    ['a second before midnight to a millisecond after one', iso(T0 + 2 * DAY - 1000), iso(T0 + 5 * DAY + 1)],
    ['from a midnight to mid-day', iso(T0 + DAY), iso(T0 + 4 * DAY + 3_600_000)],
    ['inside one day', iso(T0 + 3 * DAY + 1000), iso(T0 + 3 * DAY + 80_000_000)],
    ['across one midnight, under a day', iso(T0 + 4 * DAY - 30_000), iso(T0 + 4 * DAY + 30_000)],
  ];

  async function compareAll(label: string) {
    let compared = 0;
    let rolledUp = 0;
    for (const t of tenants) {
      for (const [name, from, to] of ranges) {
        for (const groupBy of groupings) {
          // One page of everything; small pages (cursors at every kind of boundary) where they stay few.
          for (const limit of groupBy.length <= 1 ? [3, 500] : groupBy.length === 4 ? [97, 500] : [500]) {
            const q: UsageQuery = { workspaceId: t.workspaceId, from, to, granularity: 'day', groupBy, limit };
            if (usageSources(q).rollup) rolledUp++;
            const [fromRollups, fromRaw] = [await pages(q, false), await pages(q, true)];
            assert.deepEqual(fromRollups, fromRaw, `${label}, ${name}, group_by=${groupBy.join(',')}, limit ${limit}`);
            compared += fromRaw.length;
          }
        }
      }
    }
    assert.ok(rolledUp > 0 && compared > 100, `${compared} pages compared, ${rolledUp} queries from the rollups`);
  }

  test('the fixture has what the comparison needs: usage in both tables, money and counts on both sides of midnights, empty groups', async () => {
    const parts = await sql<{ daily: number; deltas: number }>`
      select (select count(*)::int from usage_daily) as daily, (select count(*)::int from usage_deltas) as deltas`.execute(tdb.db);
    assert.ok(parts.rows[0]!.daily > 0 && parts.rows[0]!.deltas > 0, JSON.stringify(parts.rows[0]));
    const whole = await usagePage(tdb.db, {
      workspaceId: tenants[0]!.workspaceId,
      from: iso(T0 - DAY),
      to: iso(T0 + 12 * DAY),
      granularity: 'day',
      groupBy: dims,
      limit: 1000,
    });
    const t = whole.totals;
    assert.ok(t.refunded > 0 && t.spent > t.refunded && t.jobs.failed > 0 && t.jobs.pending > 0 && t.jobs.generating > 0 && t.jobs.completed > 0);
    assert.ok(new Set(whole.rows.map((r) => r.bucket.getTime())).size >= 10, 'usage on ten days or more');
    assert.ok(
      whole.rows.some((r) => r.spent === 0 && r.refunded === 0 && r.jobs.created > 0),
      'a group with jobs but no money (zero-credit charges) is answered',
    );
    assert.ok(
      whole.rows.some((r) => r.groups.key === null),
      'jobs without a key',
    );
  });

  test('every range, grouping and page answers exactly as the raw aggregation, with usage half folded', async () => {
    await compareAll('half folded');
  });

  test('the same once every delta is folded, and with new usage after the fold', async () => {
    await foldUsageDeltas(tdb.db);
    const left = await sql<{ n: number }>`select count(*)::int as n from usage_deltas`.execute(tdb.db);
    assert.equal(left.rows[0]!.n, 0);
    await compareAll('all folded');
    await moveOn((await sql<{ id: string }>`select id from jobs where status = 'pending' and id like 'w2\\_%'`.execute(tdb.db)).rows.map((r) => r.id));
    await compareAll('folded, then more');
  });

  test("the migration's backfill counts the history as the triggers did", async () => {
    await foldUsageDeltas(tdb.db);
    const before = await sql`select * from usage_daily where ledger_rows + created > 0 order by workspace_id, day, api_key_id, project_id, model, kind`.execute(
      tdb.db,
    );
    await tdb.db.transaction().execute(async (tx) => {
      const migrationDb = tx as unknown as Kysely<unknown>;
      await rollups.down(migrationDb);
      await rollups.up(migrationDb);
    });
    const rebuilt = await sql`select * from usage_daily order by workspace_id, day, api_key_id, project_id, model, kind`.execute(tdb.db);
    assert.deepEqual(rebuilt.rows, before.rows);
    await compareAll('rebuilt by the backfill');
  });
});
