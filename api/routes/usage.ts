// GET /v1/usage (extension): the key's workspace's credits spent, refunded and net and its job
// counts by status, per UTC day or hour and optionally per key, project, model and kind, over a
// range (default: the current UTC month). Money is bucketed by the ledger row's time, job counts by
// the job's creation time; operators' grants and deducts are not usage (db/repos/usage.ts). Rows
// page by cursor like the other lists; `totals` covers the whole range on every page. With
// `Accept: text/csv` the same page is answered as CSV (RFC 4180, a header row), the next page's
// cursor in the Next-Cursor header.
import { z } from 'zod';
import { DEFAULT_PAGE_LIMIT, pageLimitQuery } from '../validate.js';
import type { Request } from 'express';
import type { AppDeps } from '../deps.js';
import { authOf, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { ApiError, invalidRequest } from '../errors.js';
import { boundedUsageRead, USAGE_RETRY_MS } from '../usage-bounds.js';
import {
  usageDimensions,
  usagePage,
  type UsageDimension,
  type UsageFigures,
  type UsageGranularity,
  type UsagePosition,
  type UsageRow,
} from '../../db/repos/usage.js';
import { jobStatuses } from '../../shared/job-model.js';
import { csvDocument } from '../../shared/csv.js';

/** The longest range per granularity, in days. */
const MAX_USAGE_DAYS: Record<UsageGranularity, number> = { day: 366, hour: 31 };
const DAY_MS = 86_400_000;

const CURSOR_REFUSED = 'not a cursor returned by this endpoint';
// `usage.<bucket ms>` then `~<value>` per grouped dimension (a label's value base64url: it may hold
// any character); every string of this shape is a position.
const cursorPattern = /^usage\.([0-9]{1,15})((?:~[A-Za-z0-9._-]{0,700}){0,4})$/;
const DIMENSION = `(?:${usageDimensions.join('|')}|tag|metadata\\.[A-Za-z0-9_.-]{1,40})`;
const groupByPattern = new RegExp(`^${DIMENSION}(,${DIMENSION}){0,3}$`);
const isLabel = (d: UsageDimension) => d === 'tag' || d.startsWith('metadata.');

const moment = (what: string) =>
  z
    .union([z.iso.date(), z.iso.datetime({ offset: true })])
    .describe(`${what}: an ISO 8601 date (midnight UTC) or date-time with its offset, e.g. 2026-11-01 or 2026-11-01T12:00:00Z`);

const usageQuery = z.object({
  from: moment('start of the range, inclusive (default: the start of the UTC month `to` falls in, else of the current one)').optional(),
  to: moment('end of the range, exclusive (default: the start of the UTC month after `from`, else after the current one)').optional(),
  granularity: z
    .enum(['day', 'hour'])
    .optional()
    .describe(`bucket size, UTC (default day); a range spans at most ${MAX_USAGE_DAYS.day} days by day, ${MAX_USAGE_DAYS.hour} by hour`),
  group_by: z
    .string()
    .regex(groupByPattern, `a comma-separated list of ${usageDimensions.join(', ')}, tag, metadata.<key>`)
    .optional()
    .describe(
      `also group by these, comma-separated (at most 4): ${usageDimensions.join(', ')}, tag, metadata.<key> (key: the API key that created the job). ` +
        'By tag a job counts once under each of its tags (its credits and its count in every one; a job without tags under tag null), so the rows may sum to more than `totals`, which count each job once; ' +
        'by metadata.<key> under its value of that key (null: none)',
    ),
  limit: pageLimitQuery('rows per page'),
  cursor: z.string().regex(cursorPattern, CURSOR_REFUSED).optional().describe('the next_cursor of the previous page (with the same query)'),
});

const credits = z
  .object({
    spent: z.number().int().describe("credits charged for the workspace's jobs (charges and recharges)"),
    refunded: z.number().int().describe('credits refunded to the workspace for its jobs'),
    net: z.number().int().describe('spent minus refunded'),
  })
  .describe("credits moved in the period by the workspace's jobs, by ledger time (grants and deducts by operators are not usage)");

const jobCounts = z
  .object({
    created: z.number().int().describe('jobs created in the period'),
    ...Object.fromEntries(jobStatuses.map((s) => [s, z.number().int().describe(`of those, jobs now ${s}`)])),
  })
  .describe('jobs by creation time, by their current status') as unknown as z.ZodType<UsageFigures['jobs']>;

const usageRowSchema = z.object({
  period_start: z.string().describe('start of the UTC bucket (ISO 8601)'),
  key_id: z.string().nullable().optional().describe('with group_by=key: the API key that created the jobs (null: none recorded)'),
  project_id: z.string().optional().describe('with group_by=project'),
  model: z.string().optional().describe('with group_by=model'),
  kind: z.string().optional().describe('with group_by=kind: image, video, replace_actor or talking_actor'),
  tag: z.string().nullable().optional().describe("with group_by=tag: one of the jobs' tags (null: jobs without tags)"),
  metadata: z
    .record(z.string(), z.string().nullable())
    .optional()
    .describe("with group_by=metadata.<key>: the jobs' value of each such key (null: jobs without it)"),
  credits,
  jobs: jobCounts,
});

const responseExtra = {
  totals: z.object({ credits, jobs: jobCounts }).describe('the whole range (every page): equal to the sum of every page'),
  period: z
    .object({ from: z.string(), to: z.string(), granularity: z.enum(['day', 'hour']) })
    .describe('the range and bucket size answered (defaults applied), from inclusive, to exclusive'),
  next_cursor: z.string().nullable().describe('pass as `cursor` to get the next page; null on the last page'),
};

const dimensionField: Record<(typeof usageDimensions)[number], 'key_id' | 'project_id' | 'model' | 'kind'> = {
  key: 'key_id',
  project: 'project_id',
  model: 'model',
  kind: 'kind',
};

/** A dimension's column in the CSV (its field, or `tag`, `metadata.<key>`). */
const columnOf = (d: UsageDimension) => (isLabel(d) ? d : dimensionField[d as (typeof usageDimensions)[number]]);

const monthStart = (t: Date, add = 0) => new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth() + add, 1));
const parseMoment = (s: string) => new Date(s.length === 10 ? `${s}T00:00:00Z` : s);

/** The range asked for, defaults applied and bounds checked (400 otherwise). */
function usageRange(q: { from?: string; to?: string; granularity?: UsageGranularity }, now = new Date()) {
  const granularity = q.granularity ?? 'day';
  const from0 = q.from ? parseMoment(q.from) : undefined;
  const to0 = q.to ? parseMoment(q.to) : undefined;
  const from = from0 ?? (to0 ? monthStart(new Date(to0.getTime() - 1)) : monthStart(now));
  const to = to0 ?? monthStart(from, 1);
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) throw invalidRequest('from, to: not a date');
  if (from.getTime() >= to.getTime()) throw invalidRequest(`from (${from.toISOString()}) must be before to (${to.toISOString()})`);
  const max = MAX_USAGE_DAYS[granularity];
  if (to.getTime() - from.getTime() > max * DAY_MS) throw invalidRequest(`the range spans more than ${max} days, the most granularity=${granularity} allows`);
  return { from, to, granularity };
}

function decodeCursor(cursor: string, groupBy: UsageDimension[]): UsagePosition {
  const m = cursorPattern.exec(cursor);
  if (!m) throw invalidRequest(`cursor: ${CURSOR_REFUSED}`);
  const values = m[2] ? m[2].slice(1).split('~') : [];
  return {
    bucketMs: Number(m[1]),
    values: groupBy.map((d, i) => (isLabel(d) ? Buffer.from(values[i] ?? '', 'base64url').toString('utf8') : (values[i] ?? ''))),
  };
}

const encodeCursor = (p: UsagePosition, groupBy: UsageDimension[]) =>
  `usage.${p.bucketMs}${p.values.map((v, i) => `~${isLabel(groupBy[i]!) ? Buffer.from(v, 'utf8').toString('base64url') : v}`).join('')}`;

function presentRow(r: UsageRow, groupBy: UsageDimension[]) {
  const groups: Record<string, unknown> = {};
  for (const d of groupBy) {
    if (d.startsWith('metadata.')) groups.metadata = { ...(groups.metadata as object), [d.slice('metadata.'.length)]: r.groups[d] ?? null };
    else groups[isLabel(d) ? d : dimensionField[d as (typeof usageDimensions)[number]]] = r.groups[d] ?? null;
  }
  return { period_start: r.bucket.toISOString(), ...groups, credits: { spent: r.spent, refunded: r.refunded, net: r.net }, jobs: r.jobs };
}

/** A row's value of a dimension, for the CSV. */
function valueOf(r: ReturnType<typeof presentRow>, d: UsageDimension): string {
  const g = r as Record<string, unknown>;
  const v = d.startsWith('metadata.') ? (g.metadata as Record<string, string | null>)[d.slice('metadata.'.length)] : g[columnOf(d)];
  return (v as string | null) ?? '';
}

/** The page as CSV: one column per grouped dimension, then the figures. */
function usageCsv(rows: ReturnType<typeof presentRow>[], groupBy: UsageDimension[]): string {
  const dims = groupBy.map(columnOf);
  const head = ['period_start', ...dims, 'credits_spent', 'credits_refunded', 'credits_net', 'jobs_created', ...jobStatuses.map((s) => `jobs_${s}`)];
  const body = rows.map((r) => {
    return [
      r.period_start,
      ...groupBy.map((d) => valueOf(r, d)),
      r.credits.spent,
      r.credits.refunded,
      r.credits.net,
      r.jobs.created,
      ...jobStatuses.map((s) => r.jobs[s]),
    ];
  });
  return csvDocument([head, ...body]);
}

const wantsCsv = (req: Request) => req.accepts(['application/json', 'text/csv']) === 'text/csv';

/** GET /v1/usage, declared once. */
export const usageEndpoints = new Endpoints<AppDeps>().add({
  method: 'get',
  path: '/v1/usage',
  summary: 'Credits spent, refunded and net, and job counts, per day or hour (extension)',
  description:
    'Credits are bucketed by the time the ledger moved them (a refund counts in the bucket it was made in), job counts by the time the job was created, ' +
    'both in UTC. Charges and recharges are spent, refunds refunded; credits granted or deducted by operators are not usage. ' +
    `A range spans at most ${MAX_USAGE_DAYS.day} days by day and ${MAX_USAGE_DAYS.hour} by hour, and from must be before to (400 otherwise). ` +
    `At most a few reads of one workspace run at once across the service (429 rate_limited with retry_after_ms past that), and each has a time limit: ` +
    '503 service_unavailable (with Retry-After) when a read exceeds it; ask for a shorter range or fewer dimensions. ' +
    'Buckets without activity are left out. `Accept: text/csv` answers the same page as CSV (RFC 4180, with a header row), the next cursor in the Next-Cursor header.',
  tags: ['Usage'],
  scope: 'read',
  rateClass: 'poll',
  query: usageQuery,
  response: z.array(usageRowSchema),
  responseExtra,
  csv: 'the same page as CSV: a header row, then one line per row (period_start, the grouped columns, credits_spent, credits_refunded, credits_net, jobs_created, jobs_<status>)',
  responseHeaders: ['Next-Cursor'],
  errors: [400, 401, 429, 500, 503],
  async handler({ req, res, query: q, services: deps }) {
    const { workspaceId } = authOf(res);
    const range = usageRange(q);
    const groupBy = q.group_by ? ([...new Set(q.group_by.split(','))] as UsageDimension[]) : [];
    const limit = q.limit ?? DEFAULT_PAGE_LIMIT;
    const after = q.cursor ? decodeCursor(q.cursor, groupBy) : null;
    const bounds = { statementTimeoutMs: deps.config.USAGE_STATEMENT_TIMEOUT_MS, maxConcurrentPerWorkspace: deps.config.USAGE_MAX_CONCURRENT_PER_WORKSPACE };
    const page = await boundedUsageRead(deps.db, workspaceId, bounds, (tx) => usagePage(tx, { workspaceId, ...range, groupBy, limit, after })).catch(
      (err: unknown) => {
        if (err instanceof ApiError && err.status === 503) res.setHeader('Retry-After', String(Math.ceil(USAGE_RETRY_MS / 1000)));
        throw err;
      },
    );
    const data = page.rows.map((r) => presentRow(r, groupBy));
    const next = page.next ? encodeCursor(page.next, groupBy) : null;
    res.vary('Accept');
    if (wantsCsv(req)) {
      if (next) res.set('Next-Cursor', next);
      res.type('text/csv; charset=utf-8; header=present').send(usageCsv(data, groupBy));
      return;
    }
    const t = page.totals;
    res.json({
      data,
      totals: { credits: { spent: t.spent, refunded: t.refunded, net: t.net }, jobs: t.jobs },
      period: { from: range.from.toISOString(), to: range.to.toISOString(), granularity: range.granularity },
      next_cursor: next,
    });
  },
});

export const createUsageRouter = (deps: AppDeps, auth: Auth) => usageEndpoints.router(deps, auth);
