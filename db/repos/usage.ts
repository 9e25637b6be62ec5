// A workspace's usage over a range: credits spent, refunded and net from its ledger rows, job counts
// by status from its jobs, per UTC day or hour and optionally per key, project, model and kind.
// Money is bucketed by the ledger row's time (when the credits moved), counts by the job's creation
// time. Only the job reasons count as usage (charge and recharge spent, refund refunded); operators'
// grants and deducts are not usage. One statement reads both sources over the whole range (the
// ledger from `credit_ledger_usage_idx` alone, each row's job by primary key when grouping needs it;
// the jobs by a list index) and answers the page's groups and the range's totals together
// (GROUPING SETS), so the totals are the ledger's own sums whatever page is asked for. Its cost is
// the workspace's rows in the range, whatever the table holds.
import { sql, type RawBuilder } from 'kysely';
import type { Queryable } from '../index.js';
import { jobStatuses, type JobStatus } from '../schema.js';

export const usageDimensions = ['key', 'project', 'model', 'kind'] as const;
/**
 * A job column's dimension, or one of its labels' (0115_labels): `tag` (a job counts once under each
 * of its tags, a job without one under null) or `metadata.<key>` (its value of the key, or null).
 */
export type UsageDimension = (typeof usageDimensions)[number] | 'tag' | `metadata.${string}`;

const isLabelDimension = (d: UsageDimension) => d === 'tag' || d.startsWith('metadata.');
export type UsageGranularity = 'day' | 'hour';

/** The jobs column each dimension groups by. */
const dimensionColumn: Record<(typeof usageDimensions)[number], string> = { key: 'api_key_id', project: 'project_id', model: 'model', kind: 'kind' };

/** Where a page starts after: a bucket and the group's values (in `groupBy` order; '' for none). */
export interface UsagePosition {
  bucketMs: number;
  values: string[];
}

export interface UsageQuery {
  workspaceId: string;
  /** Inclusive. */
  from: Date;
  /** Exclusive. */
  to: Date;
  granularity: UsageGranularity;
  /** Distinct dimensions, in the order the rows are sorted by after the bucket. */
  groupBy: UsageDimension[];
  limit: number;
  after?: UsagePosition | null;
}

export interface UsageFigures {
  spent: number;
  refunded: number;
  net: number;
  jobs: Record<JobStatus, number> & { created: number };
}

export interface UsageRow extends UsageFigures {
  bucket: Date;
  /** The group's value per dimension of `groupBy` (a job created without a key: null). */
  groups: Partial<Record<UsageDimension, string | null>>;
}

export interface UsagePage {
  rows: UsageRow[];
  next: UsagePosition | null;
  totals: UsageFigures;
}

interface RawRow {
  total: boolean;
  bucket: Date | null;
  spent: string;
  refunded: string;
  created: string;
  [column: string]: unknown;
}

const DAY_MS = 86_400_000;

/** Where a day-by-day report reads each part of its range: whole UTC days from the rollups, the rest raw. */
interface UsageSources {
  /** [from, to) ranges read from the ledger and the jobs themselves. */
  raw: [Date, Date][];
  /** Whole UTC days [from, to) read from usage_daily and usage_deltas; null: none. */
  rollup: [Date, Date] | null;
}

/**
 * Splits the range: by day, its whole UTC days come from the rollups (0076_usage_daily) and the
 * partial days at either edge from the raw rows; by hour (or with `raw`), all of it is raw.
 */
export function usageSources(q: Pick<UsageQuery, 'from' | 'to' | 'granularity'>, raw = false): UsageSources {
  const firstWhole = new Date(Math.ceil(q.from.getTime() / DAY_MS) * DAY_MS);
  const lastWhole = new Date(Math.floor(q.to.getTime() / DAY_MS) * DAY_MS);
  if (raw || q.granularity !== 'day' || firstWhole.getTime() >= lastWhole.getTime()) return { raw: [[q.from, q.to]], rollup: null };
  const edges: [Date, Date][] = [
    [q.from, firstWhole],
    [lastWhole, q.to],
  ];
  return { raw: edges.filter(([a, b]) => a.getTime() < b.getTime()), rollup: [firstWhole, lastWhole] };
}

const figureColumns = ['spent', 'refunded', 'created', ...jobStatuses.map((s) => `n_${s}`)];

/**
 * The statement (limit + 1 group rows, plus the totals row); exported for EXPLAIN. `raw` reads the
 * whole range from the ledger and the jobs, as an hour-by-hour report does: the answer is the same.
 */
export function usageStatement(q: UsageQuery, opts: { raw?: boolean } = {}): RawBuilder<RawRow> {
  // The rollups hold no labels: a label dimension reads the range raw.
  const labelled = q.groupBy.some(isLabelDimension);
  const byTag = q.groupBy.includes('tag');
  const sources = usageSources(q, opts.raw || labelled);
  const unit = sql.lit(q.granularity);
  const dims = q.groupBy.map((d, i) => ({ d, col: dimensionExpression(d), as: sql.raw(`g${i}`) }));
  const dimSelect = dims.length ? sql`, ${sql.join(dims.map(({ col, as }) => sql`${col}::text as ${as}`))}` : sql``;
  const dimNames = dims.map(({ as }) => as);
  const groupSet = sql.join([sql.raw('bucket'), ...dimNames]);
  // Rows sort and page by bucket then each group value, a missing key as '' (ids are never empty).
  const sortKey = (prefix: string) => [sql.raw(`${prefix}bucket`), ...dimNames.map((n) => sql`coalesce(${sql.raw(prefix)}${n}, '') collate "C"`)];
  const after = q.after
    ? sql`and (${sql.join(sortKey('r.'))}) > (${sql.join([
        sql`timestamptz 'epoch' + ${q.after.bucketMs}::bigint * interval '1 millisecond'`,
        ...dimNames.map((_, i) => sql`${q.after!.values[i] ?? ''}::text collate "C"`),
      ])})`
    : sql``;
  // Each ledger row's job by primary key, one lookup per row (OFFSET 0 keeps the planner from
  // turning it into a hash join over every job of the table); none when nothing is grouped.
  const jobOfRow = dims.length
    ? sql`cross join lateral (select ${sql.raw(JOB_GROUP_COLUMNS)} from jobs j where j.id = l.job_id offset 0) j ${tagsOf(byTag)}`
    : sql``;
  const noCounts = sql.raw(jobStatuses.map((s) => `0 as n_${s}`).join(', '));
  const statusCounts = sql.join(jobStatuses.map((s) => sql`(j.status = ${s})::int as ${sql.raw(`n_${s}`)}`));
  const rawParts = sources.raw.flatMap(([from, to]) => [
    sql`select date_trunc(${unit}, l.created_at, 'UTC') as bucket${dimSelect},
               case when l.reason in ('charge', 'recharge') then -l.delta else 0 end as spent,
               case when l.reason = 'refund' then l.delta else 0 end as refunded,
               0 as created, ${noCounts}, ${weight(byTag)} as w
        from credit_ledger l ${jobOfRow}
        where l.workspace_id = ${q.workspaceId} and l.created_at >= ${from} and l.created_at < ${to}
          and l.reason in ('charge', 'recharge', 'refund') and l.job_id is not null`,
    sql`select date_trunc(${unit}, j.created_at, 'UTC')${dimSelect}, 0, 0, 1, ${statusCounts}, ${weight(byTag)}
        from jobs j ${tagsOf(byTag)}
        where j.workspace_id = ${q.workspaceId} and j.created_at >= ${from} and j.created_at < ${to}`,
  ]);
  // The rollups' groups of the whole days, with the deltas not yet folded, summed per finest group;
  // a group is there as a raw row would be: when a job or a ledger row counts in it.
  const rollupPart = sources.rollup
    ? [
        sql`select day as bucket${dims.length ? sql`, ${sql.join(dims.map(({ d, as }) => (d === 'key' ? sql`nullif(api_key_id, '') as ${as}` : sql`${sql.ref(dimensionColumn[d as (typeof usageDimensions)[number]])} as ${as}`)))}` : sql``},
                   ${sql.raw(figureColumns.join(', '))}, 1 as w
            from (
              select day, api_key_id, project_id, model, kind, ${sql.raw(['ledger_rows', ...figureColumns].map((f) => `sum(${f}) as ${f}`).join(', '))}
              from (
                select * from usage_daily where workspace_id = ${q.workspaceId} and day >= ${sources.rollup[0]} and day < ${sources.rollup[1]}
                union all
                select * from usage_deltas where workspace_id = ${q.workspaceId} and day >= ${sources.rollup[0]} and day < ${sources.rollup[1]}
              ) parts
              group by day, api_key_id, project_id, model, kind
              having sum(ledger_rows) + sum(created) > 0
            ) j`,
      ]
    : [];
  // The totals count each ledger row and job once (w: 0 on a job's second tag and after), the groups every row.
  const sum = (f: string) => sql`coalesce(case when grouping(bucket) = 1 then sum(u.${sql.raw(f)} * u.w) else sum(u.${sql.raw(f)}) end, 0)::text`;
  const counts = jobStatuses.map((s) => sql`${sum(`n_${s}`)} as ${sql.raw(`n_${s}`)}`);
  return sql<RawRow>`
    with u as (
      ${sql.join([...rawParts, ...rollupPart], sql` union all `)}
    ), r as (
      select grouping(bucket) = 1 as total, bucket${dimNames.length ? sql`, ${sql.join(dimNames)}` : sql``},
             ${sum('spent')} as spent, ${sum('refunded')} as refunded, ${sum('created')} as created, ${sql.join(counts)}
      from u
      group by grouping sets ((${groupSet}), ())
    )
    (select * from r where r.total)
    union all
    (select * from r where not r.total ${after} order by ${sql.join(sortKey('r.'))} limit ${q.limit + 1})`;
}

/** The columns a ledger row's job is read with when grouping (by primary key). */
const JOB_GROUP_COLUMNS = 'j.api_key_id, j.project_id, j.model, j.kind, j.tags, j.metadata';

/** A dimension's value of a row: its job's column, its tag (`t`, tagsOf) or its metadata value. */
function dimensionExpression(d: UsageDimension): RawBuilder<unknown> {
  if (d === 'tag') return sql`t.tag`;
  if (d.startsWith('metadata.')) return sql`j.metadata ->> ${d.slice('metadata.'.length)}`;
  return sql.ref(`j.${dimensionColumn[d as (typeof usageDimensions)[number]]}`);
}

/** By tag, one row per tag of the job `j` (one with a null tag for a job without any), numbered from 1. */
const tagsOf = (byTag: boolean) =>
  byTag ? sql`cross join lateral unnest(case when cardinality(j.tags) = 0 then array[null::text] else j.tags end) with ordinality t(tag, n)` : sql``;

/** 1 on the row that counts in the totals: every row, or by tag a job's first tag only. */
const weight = (byTag: boolean) => (byTag ? sql`(t.n = 1)::int` : sql`1`);

function figures(r: RawRow): UsageFigures {
  const spent = Number(r.spent);
  const refunded = Number(r.refunded);
  const jobs = Object.fromEntries(jobStatuses.map((s) => [s, Number(r[`n_${s}`])])) as Record<JobStatus, number>;
  return { spent, refunded, net: spent - refunded, jobs: { created: Number(r.created), ...jobs } };
}

export async function usagePage(db: Queryable, q: UsageQuery, opts: { raw?: boolean } = {}): Promise<UsagePage> {
  const { rows } = await usageStatement(q, opts).execute(db);
  const totalRow = rows.find((r) => r.total);
  const groups = rows.filter((r) => !r.total);
  const kept = groups.slice(0, q.limit).map((r) => ({
    bucket: r.bucket!,
    groups: Object.fromEntries(q.groupBy.map((d, i) => [d, (r[`g${i}`] as string | null) ?? null])),
    ...figures(r),
  }));
  const last = kept[kept.length - 1];
  const next = groups.length > q.limit && last ? { bucketMs: last.bucket.getTime(), values: q.groupBy.map((d) => last.groups[d] ?? '') } : null;
  const zero: RawRow = { total: true, bucket: null, spent: '0', refunded: '0', created: '0' };
  for (const s of jobStatuses) zero[`n_${s}`] = '0';
  return { rows: kept, next, totals: figures(totalRow ?? zero) };
}

/**
 * Folds the usage deltas into the daily rollups (fold_usage_deltas, 0076_usage_daily): one
 * statement, one folder at a time across the fleet (0 when another holds it). Answers the rollup
 * rows written.
 */
export async function foldUsageDeltas(db: Queryable): Promise<number> {
  const r = await sql<{ n: number }>`select fold_usage_deltas() as n`.execute(db);
  return Number(r.rows[0]?.n ?? 0);
}
