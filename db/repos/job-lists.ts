// A workspace's jobs, newest first, with keyset pagination on (created_at, id) at microsecond
// precision. Served by the 0008 indexes: (workspace_id, created_at, id) for every kind,
// (workspace_id, kind, created_at, id) per kind and (project_id, created_at, id) per project, each
// walked backwards, so a page reads about `limit` index entries whatever the table's size.
import { sql } from 'kysely';
import type { Queryable } from '../index.js';
import { createdMicros, newestFirstPage, olderThan, type NewestFirstKey } from './newest-first.js';
import type { Job, JobKind, JobStatus } from '../schema.js';
import type { JobPriority } from '../../shared/job-model.js';
import type { Page } from './catalog.js';
import { labelCreatedMicros, labelOlderThan, otherLabels, type LabelSubject } from './label-filters.js';

const JOB_LABELS: LabelSubject = { labels: 'job_labels', id: 'job_id' };

export type JobListKey = NewestFirstKey;

export interface JobListFilters {
  kind?: JobKind;
  projectId?: string;
  status?: JobStatus;
  /** Only jobs in one of these statuses (a bulk action's eligible ones); never empty. */
  statuses?: readonly JobStatus[];
  model?: string;
  priority?: JobPriority;
  /** Milliseconds since the epoch, exclusive bounds. */
  createdAfter?: number;
  createdBefore?: number;
  /** Label index keys (shared/labels.ts `tagLabel`, `metadataLabel`): jobs carrying all of them. */
  labels?: string[];
}

const fromMillis = (ms: number) => sql`timestamptz 'epoch' + ${ms}::bigint * interval '1 millisecond'`;

export interface JobListOptions {
  limit: number;
  after?: JobListKey | null;
  filters?: JobListFilters;
}

/** The page's query (limit + 1 rows, to know whether another page follows); exported for EXPLAIN. */
export function jobsPageQuery(db: Queryable, workspaceId: string, opts: JobListOptions) {
  const f = opts.filters ?? {};
  if (f.labels?.length) return labelledJobsPageQuery(db, workspaceId, opts, f.labels);
  let q = db.selectFrom('jobs').selectAll().select(createdMicros()).where('workspace_id', '=', workspaceId);
  if (f.kind !== undefined) q = q.where('kind', '=', f.kind);
  if (f.projectId !== undefined) q = q.where('project_id', '=', f.projectId);
  if (f.status !== undefined) q = q.where('status', '=', f.status);
  if (f.statuses !== undefined) q = q.where('status', 'in', f.statuses);
  if (f.model !== undefined) q = q.where('model', '=', f.model);
  if (f.priority !== undefined) q = q.where('priority', '=', f.priority);
  if (f.createdAfter !== undefined) q = q.where(sql<boolean>`created_at > ${fromMillis(f.createdAfter)}`);
  if (f.createdBefore !== undefined) q = q.where(sql<boolean>`created_at < ${fromMillis(f.createdBefore)}`);
  if (opts.after) q = q.where(olderThan(opts.after));
  return q
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(opts.limit + 1);
}

/** With a label filter: the first label's index walked newest first (db/repos/label-filters.ts), its job joined as `j`. */
function labelledJobsPageQuery(db: Queryable, workspaceId: string, opts: JobListOptions, labels: string[]) {
  const f = opts.filters ?? {};
  let q = db
    .selectFrom('job_labels as l')
    .innerJoin('jobs as j', 'j.id', 'l.job_id')
    .selectAll('j')
    .select(labelCreatedMicros())
    .where('l.workspace_id', '=', workspaceId)
    .where('l.label', '=', labels[0]!)
    .where(otherLabels(JOB_LABELS, labels.slice(1)));
  if (f.kind !== undefined) q = q.where('j.kind', '=', f.kind);
  if (f.projectId !== undefined) q = q.where('j.project_id', '=', f.projectId);
  if (f.status !== undefined) q = q.where('j.status', '=', f.status);
  if (f.statuses !== undefined) q = q.where('j.status', 'in', f.statuses);
  if (f.model !== undefined) q = q.where('j.model', '=', f.model);
  if (f.priority !== undefined) q = q.where('j.priority', '=', f.priority);
  if (f.createdAfter !== undefined) q = q.where(sql<boolean>`l.created_at > ${fromMillis(f.createdAfter)}`);
  if (f.createdBefore !== undefined) q = q.where(sql<boolean>`l.created_at < ${fromMillis(f.createdBefore)}`);
  if (opts.after) q = q.where(labelOlderThan(JOB_LABELS, opts.after));
  return q
    .orderBy('l.created_at', 'desc')
    .orderBy('l.job_id', 'desc')
    .limit(opts.limit + 1);
}

export async function listJobsPage(db: Queryable, workspaceId: string, opts: JobListOptions): Promise<Page<Job, JobListKey>> {
  const rows = await jobsPageQuery(db, workspaceId, opts).execute();
  const page = newestFirstPage(rows, opts.limit);
  return { rows: page.rows as Job[], next: page.next };
}
