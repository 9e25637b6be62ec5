// The pipeline tables' row types (0032_pipelines), part of db/schema.ts's DB.
import type { ColumnType, Generated, Selectable } from 'kysely';
import type { JobPriority } from '../shared/job-model.js';
import type { JobKind } from '../kinds/index.js';
import type { PipelineStatus, PipelineWebhookEventName, StepStatus, StoredReference } from '../shared/pipelines.js';

type Json<T> = ColumnType<T, string, string>;
type NullableTime = ColumnType<Date | null, Date | null | undefined, Date | null>;

export interface PipelineError {
  code: string;
  message: string;
}

/** A completed step's output: the upload it is registered as, its object and its media type. */
export interface PipelineStepOutput {
  upload_id: string;
  key: string;
  content_type: string;
}

export interface PipelineTable {
  id: string;
  workspace_id: string;
  project_id: string;
  api_key_id: string | null;
  status: Generated<PipelineStatus>;
  error: Json<PipelineError | null> | null;
  price: number;
  webhook_url: string | null;
  webhook_events: ColumnType<PipelineWebhookEventName[] | null, PipelineWebhookEventName[] | null | undefined, PipelineWebhookEventName[] | null>;
  cancel_requested_at: NullableTime;
  /** The parent workflow run that failed the pipeline (null: none did, or the gateway's cancel). */
  failed_run_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Set by the parent workflow's first step: a pipeline unmarked after a while is started again by the reconciler. */
  workflow_started: Generated<boolean>;
  /** The parent run the reconciler last started for a stalled pipeline, and when (0046_control_claims). */
  restarted_run_id: ColumnType<string | null, string | null | undefined, string | null>;
  restarted_at: NullableTime;
  event_seq: Generated<number>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  completed_at: NullableTime;
  /** The create's metadata and tags (0115_labels); their index rows are pipeline_labels'. */
  metadata: ColumnType<Record<string, string>, string | undefined, string>;
  tags: ColumnType<string[], string[] | undefined, string[]>;
  /** The batch whose pipeline item made it (0150_batch_pipelines); null when created through POST /v1/pipelines. */
  batch_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface PipelineStepTable {
  pipeline_id: string;
  position: number;
  step_id: string;
  kind: JobKind;
  model: string;
  /** The create body as given (references included), without project_id. */
  body: Json<Record<string, unknown>>;
  /** The params its job is created with, each reference held by its placeholder until the step runs. */
  params: Json<Record<string, unknown>>;
  refs: ColumnType<StoredReference[], string | undefined, string>;
  priority: Generated<JobPriority>;
  deadline_seconds: number | null;
  price: number;
  status: Generated<StepStatus>;
  /** Counts the step's attempts: a resume makes the next one, with a job of its own. */
  attempt: Generated<number>;
  job_id: string | null;
  jobs: Generated<string[]>;
  outputs: Json<PipelineStepOutput[] | null> | null;
  error: Json<PipelineError | null> | null;
  updated_at: Generated<Date>;
}

export type Pipeline = Selectable<PipelineTable>;
export type PipelineStep = Selectable<PipelineStepTable>;
