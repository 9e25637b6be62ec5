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
export type UsageDimension = (typeof usageDimensions)[number];
export type UsageGranularity = 'day' | 'hour';

/** The jobs column each dimension groups by. */
const dimensionColumn: Record<UsageDimension, string> = { key: 'api_key_id', project: 'project_id', model: 'model', kind: 'kind' };

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

/** The statement (limit + 1 group rows, plus the totals row); exported for EXPLAIN. */
export function usageStatement(q: UsageQuery): RawBuilder<RawRow> {
  const unit = sql.lit(q.granularity);
  const dims = q.groupBy.map((d, i) => ({ d, col: sql.ref(`j.${dimensionColumn[d]}`), as: sql.raw(`g${i}`) }));
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
  const jobOfRow = dims.length ? sql`cross join lateral (select ${sql.join(dims.map(({ col }) => col))} from jobs j where j.id = l.job_id offset 0) j` : sql``;
  const counts = jobStatuses.map((s) => sql`count(*) filter (where u.status = ${s})::text as ${sql.raw(`n_${s}`)}`);
  return sql<RawRow>`
    with u as (
      select date_trunc(${unit}, l.created_at, 'UTC') as bucket${dimSelect},
             case when l.reason in ('charge', 'recharge') then -l.delta else 0 end as spent,
             case when l.reason = 'refund' then l.delta else 0 end as refunded,
             null::text as status
      from credit_ledger l ${jobOfRow}
      where l.workspace_id = ${q.workspaceId} and l.created_at >= ${q.from} and l.created_at < ${q.to}
        and l.reason in ('charge', 'recharge', 'refund') and l.job_id is not null
      union all
      select date_trunc(${unit}, j.created_at, 'UTC')${dimSelect}, 0, 0, j.status
      from jobs j
      where j.workspace_id = ${q.workspaceId} and j.created_at >= ${q.from} and j.created_at < ${q.to}
    ), r as (
      select grouping(bucket) = 1 as total, bucket${dimNames.length ? sql`, ${sql.join(dimNames)}` : sql``},
             coalesce(sum(u.spent), 0)::text as spent, coalesce(sum(u.refunded), 0)::text as refunded,
             count(u.status)::text as created, ${sql.join(counts)}
      from u
      group by grouping sets ((${groupSet}), ())
    )
    (select * from r where r.total)
    union all
    (select * from r where not r.total ${after} order by ${sql.join(sortKey('r.'))} limit ${q.limit + 1})`;
}

function figures(r: RawRow): UsageFigures {
  const spent = Number(r.spent);
  const refunded = Number(r.refunded);
  const jobs = Object.fromEntries(jobStatuses.map((s) => [s, Number(r[`n_${s}`])])) as Record<JobStatus, number>;
  return { spent, refunded, net: spent - refunded, jobs: { created: Number(r.created), ...jobs } };
}

export async function usagePage(db: Queryable, q: UsageQuery): Promise<UsagePage> {
  const { rows } = await usageStatement(q).execute(db);
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
