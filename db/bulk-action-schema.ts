// The bulk action tables' row types (0135_bulk_actions), part of db/schema.ts's DB.
import type { ColumnType, Generated, Selectable } from 'kysely';
import type { BulkActionName } from '../shared/bulk-actions.js';

export { bulkActionNames, type BulkActionName } from '../shared/bulk-actions.js';

type Json<T> = ColumnType<T, string, string>;
type NullableTime = ColumnType<Date | null, Date | null | undefined, Date | null>;

type BulkActionStatus = 'running' | 'completed';
/** A job's state in the action: `pending` until the run applied the action to it. */
export const bulkJobStates = ['pending', 'done', 'skipped', 'failed'] as const;
export type BulkJobState = (typeof bulkJobStates)[number];

interface BulkActionTable {
  id: string;
  workspace_id: string;
  api_key_id: string | null;
  action: BulkActionName;
  /** The request's `filter` or `ids`, as given. */
  selector: Json<Record<string, unknown>>;
  status: Generated<BulkActionStatus>;
  job_count: number;
  /** Set by the run's first step: an action unmarked after a while is started again by the reconciler. */
  workflow_started: Generated<boolean>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  completed_at: NullableTime;
}

interface BulkActionJobTable {
  bulk_action_id: string;
  job_id: string;
  status: Generated<BulkJobState>;
  /** A retry's new job. */
  result_job_id: string | null;
  /** Why the job was skipped or failed. */
  reason: string | null;
  updated_at: Generated<Date>;
}

export type BulkAction = Selectable<BulkActionTable>;

/** This file's tables, as the database interface (db/schema.ts `DB`) lists them. */
export interface BulkActionTables {
  bulk_actions: BulkActionTable;
  bulk_action_jobs: BulkActionJobTable;
}
