// The label filters of the job and pipeline lists (`?tag=`, `?metadata[k]=v`, all of them), over the
// label index tables (0115_labels). The first label drives the page: its key (workspace_id, label,
// created_at, id) is walked backwards from the cursor, each row's job or pipeline fetched by primary
// key; every further label is one primary-key probe of the same table for the same row. So a page
// reads about `limit` index entries of the first label, whatever the workspace or the tables hold
// (more when a further label or another filter rejects many of them, as any filter does).
import { sql, type RawBuilder } from 'kysely';
import type { NewestFirstKey } from './newest-first.js';

export interface LabelSubject {
  /** The label table and its id column. */
  labels: 'job_labels' | 'pipeline_labels';
  id: 'job_id' | 'pipeline_id';
}

/** `created_us` of the label row (the subject's own created_at, kept exactly). */
export const labelCreatedMicros = () => sql<string>`(extract(epoch from l.created_at) * 1000000)::bigint::text`.as('created_us');

/** The further labels, each a primary-key probe of the row `l` stands on. */
export function otherLabels(s: LabelSubject, labels: readonly string[]): RawBuilder<boolean> {
  const probes = labels.map(
    (label) =>
      // OFFSET 0 keeps it a probe per row: the planner would otherwise hash every row of the label.
      sql`exists (select 1 from ${sql.table(s.labels)} o where o.workspace_id = l.workspace_id and o.label = ${label} and o.created_at = l.created_at and o.${sql.ref(s.id)} = l.${sql.ref(s.id)} offset 0)`,
  );
  return probes.length ? sql<boolean>`${sql.join(probes, sql` and `)}` : sql<boolean>`true`;
}

/** The label rows after `key` in newest-first order. */
export const labelOlderThan = (s: LabelSubject, key: NewestFirstKey) =>
  sql<boolean>`(l.created_at, l.${sql.ref(s.id)}) < (timestamptz 'epoch' + ${key.createdAtMicros}::bigint * interval '1 microsecond', ${key.id})`;
