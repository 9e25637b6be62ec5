// The batch tables' row types (0125_batches, 0150_batch_pipelines), part of db/schema.ts's DB.
import type { ColumnType, Generated, Selectable } from 'kysely';
import type { BatchItemKind } from '../shared/batches.js';

type Json<T> = ColumnType<T, string, string>;
type NullableTime = ColumnType<Date | null, Date | null | undefined, Date | null>;

export type BatchStatus = 'running' | 'completed' | 'canceled';
/** An item's own status until it has a job; a started item's status is its job's. */
type BatchItemState = 'waiting' | 'started' | 'canceled' | 'failed';

export interface BatchError {
  code: string;
  message: string;
}

interface BatchTable {
  id: string;
  workspace_id: string;
  project_id: string;
  api_key_id: string | null;
  status: Generated<BatchStatus>;
  item_count: number;
  price: number;
  webhook_url: string | null;
  cancel_requested_at: NullableTime;
  /** Set by the parent workflow's first step: a batch unmarked after a while is started again by the reconciler. */
  workflow_started: Generated<boolean>;
  /** How many times every item ended (each sends one batch.completed). */
  completions: Generated<number>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  completed_at: NullableTime;
}

interface BatchItemTable {
  batch_id: string;
  position: number;
  custom_id: string;
  kind: BatchItemKind;
  /** The job's model; a pipeline item's steps' models, joined by `,`. */
  model: string;
  /** The create body as given (without project_id). */
  body: Json<Record<string, unknown>>;
  /** The kind's params its job is created with (as the kind's create prepared them); a pipeline item's: `{ steps }`, its pipeline's steps as checked. */
  params: Json<Record<string, unknown>>;
  deadline_seconds: number | null;
  price: number;
  status: Generated<BatchItemState>;
  attempt: Generated<number>;
  job_id: string | null;
  jobs: Generated<string[]>;
  /** A pipeline item's pipeline once started (every attempt resumes it); null for a job item. */
  pipeline_id: ColumnType<string | null, string | null | undefined, string | null>;
  error: Json<BatchError | null> | null;
  updated_at: Generated<Date>;
}

export type Batch = Selectable<BatchTable>;
export type BatchItem = Selectable<BatchItemTable>;

/** This file's tables, as the database interface (db/schema.ts `DB`) lists them. */
export interface BatchTables {
  batches: BatchTable;
  batch_items: BatchItemTable;
}
