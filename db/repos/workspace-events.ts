// The workspace event log (0120_workspace_events): the writers' append, the gap-free read after a
// sequence number, and the retention sweep. A job's events are written by the jobs table's trigger
// and a balance crossing's by the outbox's; the pipelines' and the budgets' writers call
// appendWorkspaceEvent in the transaction of their move. Every row is numbered at its commit.
import { sql } from 'kysely';
import type { Queryable } from '../index.js';
import type { WorkspaceEvent } from '../event-schema.js';
import { jobStatuses } from '../../shared/job-model.js';
import { pipelineWebhookEventNames } from '../../shared/pipelines.js';
import { BALANCE_LOW_EVENT } from '../../shared/balance.js';
import { BUDGET_THRESHOLD_EVENT_NAME } from '../../shared/webhooks/endpoints.js';

export type { WorkspaceEvent } from '../event-schema.js';

interface NewWorkspaceEvent {
  /** The event id: the webhook-id its delivery has (or would have). */
  id: string;
  workspaceId: string;
  type: string;
  subjectId: string;
  /** The webhook body's `data`. */
  data: unknown;
}

/**
 * Records one event in the transaction `tx`; it is numbered when `tx` commits (a deferred
 * trigger), so the workspace's counter is locked only for that commit. Writing the same id again
 * (a checkpoint retried after its commit) records nothing.
 */
export async function appendWorkspaceEvent(tx: Queryable, e: NewWorkspaceEvent): Promise<void> {
  await tx
    .insertInto('workspace_events')
    .values({ id: e.id, workspace_id: e.workspaceId, type: e.type, subject_id: e.subjectId, data: JSON.stringify(e.data) })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

/** Which types a read keeps: exact names (`job.completed`) and families (`job.*`); empty keeps all. */
export interface TypeFilter {
  exact: string[];
  prefixes: string[];
}

/**
 * Every type the log's writers write, by family: a job's every status (0120's trigger writes
 * `job.<status>`), the pipelines', the budgets' and the balance's. A family filter reads these.
 */
export const loggedEventTypes: Readonly<Record<string, readonly string[]>> = {
  job: jobStatuses.map((s) => `job.${s}`),
  pipeline: pipelineWebhookEventNames,
  budget: [BUDGET_THRESHOLD_EVENT_NAME],
  balance: [BALANCE_LOW_EVENT],
};

/** The filter as the exact types it keeps (a family: its logged types; an unknown family: none). */
export function filterTypes(t: TypeFilter): string[] {
  return [...new Set([...t.exact, ...t.prefixes.flatMap((p) => loggedEventTypes[p] ?? [])])].sort();
}

/**
 * The workspace's events numbered after `after`, in order, at most `limit`. Numbers are handed out
 * in commit order, one transaction at a time (0120_workspace_events), so once seq N is visible every
 * smaller number of the workspace is too: reading on from the last seq seen never skips an event.
 */
export async function listWorkspaceEvents(db: Queryable, workspaceId: string, opts: WorkspaceEventsPage): Promise<WorkspaceEvent[]> {
  return (await workspaceEventsQuery(db, workspaceId, opts).execute()) as WorkspaceEvent[];
}

interface WorkspaceEventsPage {
  after: number;
  limit: number;
  types?: TypeFilter;
}

/**
 * The page's query, unexecuted (bench:scale EXPLAINs exactly what the gateway sends). Unfiltered: the
 * log read on from `after` (index workspace_id, seq). Filtered: one branch per type, each the first
 * `limit` events of that type after `after` in order (index workspace_id, type, seq:
 * 0140_workspace_events_by_type), merged by seq: at most a page per type is read however rare the
 * type is in the log, where filtering the whole log's read on would scan to its end for a rare one.
 */
export function workspaceEventsQuery(db: Queryable, workspaceId: string, opts: WorkspaceEventsPage) {
  const log = () => db.selectFrom('workspace_events').selectAll().where('workspace_id', '=', workspaceId).where('seq', '>', opts.after);
  const t = opts.types;
  if (!t || (t.exact.length === 0 && t.prefixes.length === 0)) return log().orderBy('seq').limit(opts.limit);
  const branches = filterTypes(t).map((type, i) => db.selectFrom(log().where('type', '=', type).orderBy('seq').limit(opts.limit).as(`t${i}`)).selectAll());
  // A filter that keeps no type the log has: an empty page, as the same shape.
  if (branches.length === 0)
    return log()
      .where(sql<boolean>`false`)
      .orderBy('seq')
      .limit(opts.limit);
  const [first, ...rest] = branches;
  const merged = rest.reduce((q, b) => q.unionAll(b), first!);
  return db.selectFrom(merged.as('e')).selectAll().orderBy('seq').limit(opts.limit);
}

/** The newest number the workspace has handed out (0: none yet). */
export async function lastWorkspaceSeq(db: Queryable, workspaceId: string): Promise<number> {
  const r = await sql<{ last_seq: number }>`select last_seq from workspace_event_counters where workspace_id = ${workspaceId}`.execute(db);
  return Number(r.rows[0]?.last_seq ?? 0);
}

/**
 * Removes events older than `keepDays` across workspaces, oldest first, at most `limit` (one bounded
 * batch per reconciler pass). Only the oldest end of each workspace's log goes: what stays is still
 * gap-free from its first number on. Returns how many it removed.
 */
export async function sweepWorkspaceEvents(db: Queryable, keepDays: number, limit = 5_000): Promise<number> {
  const r = await sql<{ removed: number }>`
    with gone as (
      delete from workspace_events
       where id in (
         select id from workspace_events
          where created_at < now() - make_interval(days => ${keepDays}::integer)
          order by created_at
          limit ${limit}::integer)
      returning 1)
    select count(*)::integer as removed from gone`.execute(db);
  return Number(r.rows[0]?.removed ?? 0);
}
