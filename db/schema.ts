// Kysely table types: one interface per table, with Selectable / Insertable aliases.
import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';
import type { BudgetChargeTable, BudgetSpendTable, BudgetTable } from './budget-schema.js';
import type { ApiKeyRuleColumns } from './api-key-schema.js';
import type { AuditEventTable, JobTimelineTable } from './log-schema.js';
import type { PipelineStepTable, PipelineTable } from './pipeline-schema.js';
import type { RouteProbeTable } from './route-probe-schema.js';
import type { DeploymentTables } from './deployment-schema.js';
import type { BalanceAlertTables } from './budget-schema.js';
import type { ConsoleTables } from './console-schema.js';
import type { LabelTables } from './label-schema.js';
import type { BatchTables } from './batch-schema.js';
import type { BulkActionTables } from './bulk-action-schema.js';
import type { WebhookEndpointTables } from './webhook-endpoint-schema.js';
import type { RouteSlotTables } from './route-slot-schema.js';
import type { EventTables } from './event-schema.js';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T> = ColumnType<T, string, string>;

import type { JobKind } from '../kinds/index.js';
import type { JobError, JobOutput, JobPhase, JobPriority, JobStatus, ProviderAttempt, WebhookEventName } from '../shared/job-model.js';
import type { StoredJobParams } from '../shared/job-params.js';
import type { UploadStatus } from '../shared/uploads.js';

export { jobKinds, type JobKind } from '../kinds/index.js';
export {
  jobPhases,
  jobStatuses,
  webhookEventNames,
  type JobError,
  type JobOutput,
  type JobPhase,
  type JobStatus,
  type WebhookEventName,
} from '../shared/job-model.js';
export type MemberRole = 'owner' | 'member';
export type LedgerReason = 'charge' | 'refund' | 'recharge' | 'grant' | 'deduct';
export type { UploadStatus } from '../shared/uploads.js';

interface WorkspaceTable {
  id: string;
  name: string;
  credits: ColumnType<number, number | undefined, number>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  /** The workspace's Temporal fairness weight on every queue its jobs wait in (0021_fair_share); 1 by default. */
  fair_share_weight: Generated<number>;
  /** Whether the workspace's jobs may ask for `priority: high`. */
  high_priority_allowed: Generated<boolean>;
  /** The default of its creates that do not say `reuse` (0145_request_reuse). */
  reuse_requests: Generated<boolean>;
}

interface WorkspaceMemberTable {
  workspace_id: string;
  email: string;
  role: MemberRole;
  created_at: Generated<Date>;
}

export interface ApiKeyTable extends ApiKeyRuleColumns {
  id: string;
  workspace_id: string;
  name: string;
  secret_hash: string;
  created_by: string;
  created_at: Generated<Date>;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

interface ProjectTable {
  id: string;
  workspace_id: string;
  name: string;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

interface ActorTable {
  id: string;
  name: string;
  age: string;
  gender: string;
  skin_tone: string;
  is_pro: boolean;
  default_voice_id: string | null;
  reference_image_key: string;
  preview_video_key: string;
  preview_thumbnail_key: string;
  sort_key: number;
  created_at: Generated<Date>;
}

interface VoiceTable {
  id: string;
  name: string;
  gender: string;
  language: string;
  accent: string;
  preview_key: string;
  /** The local TTS voice (espeak-ng variant) that renders this voice offline. */
  tts_voice: string;
  /** The provider's own voice id when routed live (ElevenLabs). */
  provider_voice_id: string | null;
  sort_key: number;
  created_at: Generated<Date>;
}

interface FileUploadTable {
  id: string;
  workspace_id: string;
  project_id: string;
  name: string;
  object_key: string;
  file_type: 'image' | 'video';
  mime_type: string;
  file_size: ColumnType<number, number, number>;
  status: UploadStatus;
  source_url: string | null;
  /**
   * Pending: removed by the sweep after this moment unless completed. Completed: no longer served
   * nor usable as a job input after it (the sweep then marks it `expired`).
   */
  expires_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** The lifetime a direct upload asked for, counted from its completion (null: the default). */
  retention_seconds: ColumnType<number | null, number | null | undefined, number | null>;
  /** When the upload's objects were removed from storage (expired or deleted uploads). */
  objects_removed_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface JobTable {
  id: string;
  kind: JobKind;
  workspace_id: string;
  project_id: string;
  api_key_id: string | null;
  model: string;
  status: JobStatus;
  /** The kind's parameters and its route (shared/job-params.ts); read them typed with `typedParams`. */
  params: Json<StoredJobParams>;
  error: Json<JobError | null> | null;
  price: number;
  outputs: Json<JobOutput[]> | null;
  provider_ref: Json<Record<string, unknown> | null> | null;
  workflow_started: Generated<boolean>;
  /** The workflow run that made the last status move (null: none did, e.g. a cancel before any workflow ran). */
  status_run_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
  /** Progress written by the job's activities (see setJobPhase / recordPollProgress). */
  phase: Generated<JobPhase>;
  percent: number | null;
  queue_position: number | null;
  /** The attempt of the pipeline step that last wrote the progress. */
  attempt: Generated<number>;
  progress_updated_at: Timestamp | null;
  /** Counts the changes that notify `job_events` (0006_job_events_seq): the live event stream's event id. */
  event_seq: Generated<number>;
  /** A reconciler replica's claim on the job until this moment (0011_flat_at_scale); null when none. */
  reconcile_lease_until: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Where the job's webhook events go (0007_webhooks); null: no webhooks. */
  webhook_url: ColumnType<string | null, string | null | undefined, string | null>;
  /** The events asked for: a subset of generating, completed, failed. */
  webhook_events: ColumnType<WebhookEventName[] | null, WebhookEventName[] | null | undefined, WebhookEventName[] | null>;
  /** When a client deleted the job's outputs (DELETE /v1/{kind}/{id}): the record stays, its media is gone. */
  outputs_removed_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** The routes the job gave up, in order (0012_provider_failover): its record's `provider_attempts`. */
  provider_attempts: ColumnType<ProviderAttempt[], string | undefined, string>;
  /** When the customer asked to cancel (0015_cancel_charges); null: never. */
  cancel_requested_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Credits a customer's cancel did not refund (the provider's cost); null: not canceled by its customer. */
  cancel_kept: ColumnType<number | null, number | null | undefined, number | null>;
  /** When a customer's cancel failed the job after its submit to a provider: counted by the churn limit. */
  canceled_after_submit_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** When the run that holds the job claimed it (0018_run_claims): the model's deadline counts from it. */
  claimed_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** The job's priority (0021_fair_share): its Temporal priority key. */
  priority: Generated<JobPriority>;
  /** The workspace's fairness weight when the job was created: the weight its tasks are scheduled with. */
  fairness_weight: Generated<number>;
  /** The customer's deadline (`deadline_seconds` at create); null: none. */
  deadline_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** When the job's request first reached its provider (0025_queue_view); null: still waiting in our queues. */
  submitted_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** The sums of the job's ledger debits and credits (0029_receipts): its record's `charges`. */
  credits_charged: Generated<number>;
  credits_refunded: Generated<number>;
  /** The create's metadata and tags (0115_labels; their index rows: job_labels). */
  metadata: ColumnType<Record<string, string>, string | undefined, string>;
  tags: ColumnType<string[], string[] | undefined, string[]>;
  /** The key of the canonical request when the create opted into reuse (0145_request_reuse); null: never reused nor a source. */
  reuse_key: ColumnType<string | null, string | null | undefined, string | null>;
  /** The job this one waits for (in flight) or was answered from (completed); null when it runs itself. */
  reused_from: ColumnType<string | null, string | null | undefined, string | null>;
}

interface ReuseSourceTable {
  workspace_id: string;
  reuse_key: string;
  job_id: string;
  updated_at: Generated<Date>;
}

/** The circuit breaker of one provider route of a model, shared by the fleet (0012_provider_failover). */
interface ProviderCircuitTable {
  provider: string;
  model: string;
  state: Generated<CircuitState>;
  window_started_at: Generated<Date>;
  attempts: Generated<number>;
  failures: Generated<number>;
  opened_at: Timestamp | null;
  trial_at: Timestamp | null;
  /** The job let through as the half-open trial (0019_breaker_trials): only its outcome decides. */
  trial_token: string | null;
  last_error: string | null;
  updated_at: Generated<Date>;
}
/** A job's route outcome the breaker counted (0019_breaker_trials): one per job and route. */
interface ProviderRouteOutcomeTable {
  job_id: string;
  provider: string;
  ok: boolean;
  created_at: Generated<Date>;
}
export type CircuitState = 'closed' | 'open' | 'half_open';

export type { RouteProbeStatus, RouteProbeTable } from './route-probe-schema.js';

interface WebhookSecretTable {
  id: string;
  workspace_id: string;
  secret_encrypted: string;
  created_by: string;
  created_at: Generated<Date>;
  expires_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** The webhook outbox: one row per requested job event, written by a trigger (0007_webhooks). */
interface WebhookDeliveryTable {
  id: string;
  /** Null for an event that is not a job's (a budget's threshold alert, 0028_budgets). */
  job_id: string | null;
  workspace_id: string;
  type: string;
  url: string;
  job: Json<Record<string, unknown>>;
  created_at: Generated<Date>;
  dispatched_at: Timestamp | null;
  dispatch_claimed_until: Timestamp | null;
  attempts: Generated<number>;
  last_status: number | null;
  last_error: string | null;
  delivered_at: Timestamp | null;
  failed_at: Timestamp | null;
  superseded_at: Timestamp | null;
  /** When the next attempt is due (a retry after a failed attempt, or the end of a circuit wait); null when none is scheduled. */
  next_retry_at: Timestamp | null;
  /** Set while the delivery waits for its destination's open circuit (nothing is sent meanwhile). */
  circuit_open_until: Timestamp | null;
  /** Redeliveries asked for (0031_webhook_attempts); the n-th runs as workflow `<id>/redeliver-<n>`. */
  redeliveries: Generated<number>;
  endpoint_id: string | null;
  event_id: Generated<string>;
}

/** One request sent for a webhook event (0031_webhook_attempts). */
interface WebhookAttemptTable {
  delivery_id: string;
  /** 1, 2, …: across the original delivery and every redelivery. */
  number: number;
  attempt_key: string;
  started_at: Generated<Date>;
  /** The receiver's HTTP status; null when none came (timeout, connection error, refused URL). */
  status_code: number | null;
  /** shared/webhooks/attempts.ts `attemptErrorClasses`; null for a 2xx. */
  error_class: string | null;
  latency_ms: number | null;
  next_retry_at: Timestamp | null;
}

/** One workspace's circuit breaker for one destination (shared/webhooks/circuit.ts). */
export interface WebhookCircuitTable {
  workspace_id: string;
  /** The receiver's URL host (with its port when not the default). */
  destination: string;
  state: Generated<'closed' | 'open' | 'half_open'>;
  failures: Generated<number>;
  failing_since: Timestamp | null;
  last_failure_at: Timestamp | null;
  open_until: Timestamp | null;
  trials_admitted: Generated<number>;
  trial_failures: Generated<number>;
  trials_started_at: Timestamp | null;
  updated_at: Generated<Date>;
}

interface CreditLedgerTable {
  id: Generated<string>;
  workspace_id: string;
  job_id: string | null;
  /** Per-job sequence: (job_id, job_seq) is unique, so one settlement step can never be written twice. */
  job_seq: number | null;
  delta: number;
  reason: LedgerReason;
  note: string | null;
  created_at: Generated<Date>;
}

/** Leases of rate-limit tokens per key and class: parallel arrays of expiry and token count. */
interface RateLimitTable {
  api_key_id: string;
  class: string;
  lease_expires: Generated<Date[]>;
  lease_tokens: Generated<number[]>;
}

/** A claimed Idempotency-Key of a workspace and, once answered, its answer (0008_idempotency_lists). */
export interface IdempotencyKeyTable {
  workspace_id: string;
  key: string;
  operation: string;
  fingerprint: string | null;
  claim_token: string;
  status: 'in_progress' | 'completed';
  response_status: number | null;
  response_body: Json<unknown> | null;
  locked_at: Generated<Date>;
  created_at: Generated<Date>;
}

/** Every table: this file's, and each feature schema file's group. */
export interface DB
  extends DeploymentTables, BalanceAlertTables, ConsoleTables, LabelTables, BatchTables, BulkActionTables, WebhookEndpointTables, RouteSlotTables, EventTables {
  workspaces: WorkspaceTable;
  workspace_members: WorkspaceMemberTable;
  api_keys: ApiKeyTable;
  projects: ProjectTable;
  actors: ActorTable;
  voices: VoiceTable;
  file_uploads: FileUploadTable;
  jobs: JobTable;
  /** Per workspace and reuse key, the job identical creates wait for or are answered from (0145_request_reuse). */
  reuse_sources: ReuseSourceTable;
  provider_circuits: ProviderCircuitTable;
  provider_route_outcomes: ProviderRouteOutcomeTable;
  route_probes: RouteProbeTable;
  credit_ledger: CreditLedgerTable;
  rate_limits: RateLimitTable;
  webhook_secrets: WebhookSecretTable;
  webhook_deliveries: WebhookDeliveryTable;
  webhook_circuits: WebhookCircuitTable;
  webhook_attempts: WebhookAttemptTable;
  idempotency_keys: IdempotencyKeyTable;
  audit_events: AuditEventTable;
  budgets: BudgetTable;
  budget_spend: BudgetSpendTable;
  budget_charges: BudgetChargeTable;
  job_timeline: JobTimelineTable;
  pipelines: PipelineTable;
  pipeline_steps: PipelineStepTable;
}

export type Workspace = Selectable<WorkspaceTable>;
export type ApiKey = Selectable<ApiKeyTable>;
export type Project = Selectable<ProjectTable>;
export type Actor = Selectable<ActorTable>;
export type Voice = Selectable<VoiceTable>;
export type FileUpload = Selectable<FileUploadTable>;
export type NewFileUpload = Insertable<FileUploadTable>;
export type Job = Selectable<JobTable>;
export type WebhookDelivery = Selectable<WebhookDeliveryTable>;
export type WebhookAttempt = Selectable<WebhookAttemptTable>;
export type { AuditEvent, AuditEventTable, JobTimelineTable } from './log-schema.js';
export type { Pipeline, PipelineStep } from './pipeline-schema.js';
export type { Budget, BudgetChargeTable, BudgetSpendTable, BudgetTable } from './budget-schema.js';
