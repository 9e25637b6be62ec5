// The workspace event log's row type (0120_workspace_events), part of db/schema.ts's DB. The
// per-workspace counters (`workspace_event_counters`) are written only by that migration's SQL
// functions, so they have no row type here.
import type { ColumnType, Generated, Selectable } from 'kysely';

/** One event of a workspace's log: numbered at its transaction's commit. */
interface WorkspaceEventTable {
  /** The event id: its webhook delivery's `webhook-id`. */
  id: string;
  workspace_id: string;
  /** The per-workspace sequence (bigint, read as a number: db/index.ts); null only before the writing transaction commits. */
  seq: ColumnType<number | null, null | undefined, never>;
  type: string;
  subject_id: string;
  /** A job's event: the job row at the move (to_jsonb); any other: the webhook body's data. */
  data: ColumnType<Record<string, unknown>, string, never>;
  created_at: Generated<Date>;
}

export type WorkspaceEvent = Selectable<WorkspaceEventTable>;

/** This file's tables, as the database interface (db/schema.ts `DB`) lists them. */
export interface EventTables {
  workspace_events: WorkspaceEventTable;
}
