// The client's types: records and bodies from the OpenAPI document (./openapi.ts, generated), the
// job kinds and their paths, the options of its calls, and which method serves each operation.
import type { operations } from './openapi.js';

// ------------------------------------------------------------------ types from the document

type JsonOf<Op> = Op extends { responses: { 200: { content: { 'application/json': infer B } } } } ? B : never;
type BodyOf<Op> = Op extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;
type QueryOf<Op> = Op extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
type DataOf<K extends keyof operations> = JsonOf<operations[K]> extends { data: infer D } ? D : never;
/** A list answer: `{ data: [...], next_cursor }`. */
export type Page<K extends keyof operations> = JsonOf<operations[K]>;

export type Project = DataOf<'get_projects'>[number];
export type Actor = DataOf<'get_actors'>[number];
export type Voice = DataOf<'get_voices'>[number];
export type FileUpload = DataOf<'post_upload'>;
export type ImageJob = DataOf<'get_images_by_id'>;
export type VideoJob = DataOf<'get_videos_by_id'>;
export type ReplaceActorJob = DataOf<'get_replace_actors_generations_by_id'>;
export type TalkingActorJob = DataOf<'get_talking_actors_by_id'>;
export type UrlResult = DataOf<'get_images_by_id_url'>;
/** A job's timeline (its receipt): GET /v1/jobs/{id}/timeline. */
export type JobTimeline = DataOf<'get_jobs_by_id_timeline'>;
export type JobStatus = ImageJob['status'];
export type JobProgress = NonNullable<ImageJob['progress']>;

export type ImageCreate = BodyOf<operations['post_images_generate']>;
/** A job's priority in the queues (every create's `priority`, every record's). */
export type JobPriority = ImageJob['priority'];
/** Every priority, first served first. */
export const jobPriorities = ['high', 'normal', 'low'] as const satisfies readonly JobPriority[];
export type VideoCreate = BodyOf<operations['post_videos_generate']>;
export type ReplaceActorCreate = BodyOf<operations['post_replace_actors_generations']>;
export type TalkingActorCreate = BodyOf<operations['post_talking_actors_generate']>;
export type UploadFromUrl = BodyOf<operations['post_upload_from_url']>;
/** The workspace's credits (GET /v1/balance). */
export type Balance = DataOf<'get_balance'>;
/** The body of POST /v1/api-keys. */
export type ApiKeyCreate = BodyOf<operations['post_api_keys']>;
/** An API key as GET /v1/api-keys lists it (no secret). */
export type ApiKey = DataOf<'delete_api_keys_by_id'>;
/** The body of PUT /v1/balance/alerts. */
export type BalanceAlerts = BodyOf<operations['put_balance_alerts']>;
export type DirectUploadCreate = BodyOf<operations['post_uploads']>;
/** A direct upload as created: the pending record plus the presigned POST to send the bytes with. */
export type DirectUpload = DataOf<'post_uploads'>;
/** A direct upload's record (GET /v1/uploads/{id}, POST …/complete). */
export type DirectUploadRecord = DataOf<'get_uploads_by_id'>;
export type UploadMimeType = DirectUploadCreate['mime_type'];
export type Health = JsonOf<operations['get_healthz']>;
export type Readiness = JsonOf<operations['get_readyz']>;
export type ProjectsQuery = QueryOf<operations['get_projects']>;
export type ActorsQuery = QueryOf<operations['get_actors']>;
export type VoicesQuery = QueryOf<operations['get_voices']>;
export type UsageQuery = QueryOf<operations['get_usage']>;
/** One row of a usage report: a bucket (and group) with its credits and job counts. */
export type UsageRow = DataOf<'get_usage'>[number];

/** The four job kinds, named as in their paths. */
export type JobKind = 'images' | 'videos' | 'replace-actors' | 'talking-actors';
export interface JobRecords {
  images: ImageJob;
  videos: VideoJob;
  'replace-actors': ReplaceActorJob;
  'talking-actors': TalkingActorJob;
}
export type AnyJob = JobRecords[JobKind];
export interface CreateBodies {
  images: ImageCreate;
  videos: VideoCreate;
  'replace-actors': ReplaceActorCreate;
  'talking-actors': TalkingActorCreate;
}
/** What waitForJob needs: the kind and the id (every create result carries both). */
export interface JobRef<K extends JobKind = JobKind> {
  kind: K;
  id: string;
}
/** The answer of `?dry_run=true` on a create: the price and whether the balance covers it. */
export type DryRunQuote = Extract<DataOf<'post_images_generate'>, { sufficient: boolean }>;
/** A create's 200 answer without its dry-run alternative. */
export type CreatedData<K extends keyof operations> = Exclude<DataOf<K>, DryRunQuote>;
export type Created<K extends keyof operations, Kind extends JobKind> = CreatedData<K> & { kind: Kind };

/** Paths of each kind: status, URL and cancel under `base`, create at `create`. */
export const jobPaths: Record<JobKind, { create: string; base: string; idPrefix: string }> = {
  images: { create: '/v1/images/generate', base: '/v1/images', idPrefix: 'img_' },
  videos: { create: '/v1/videos/generate', base: '/v1/videos', idPrefix: 'vid_' },
  'replace-actors': { create: '/v1/replace-actors/generations', base: '/v1/replace-actors/generations', idPrefix: 'rpl_' },
  'talking-actors': { create: '/v1/talking-actors/generate', base: '/v1/talking-actors', idPrefix: 'tlk_' },
};

/** The job kind an id belongs to, from its prefix (`img_…` → images), or null. */
export function kindOfJobId(id: string): JobKind | null {
  for (const [kind, p] of Object.entries(jobPaths)) if (id.startsWith(p.idPrefix)) return kind as JobKind;
  return null;
}

/** GET /v1/jobs: filters and paging. */
export type JobListQuery = QueryOf<operations['get_jobs']>;
/** A record of GET /v1/jobs: the kind's job record plus `kind` (image, video, replace_actor, talking_actor). */
export type JobListItem = DataOf<'get_jobs'>[number];
/** A model of GET /v1/models. */
export type ModelInfo = DataOf<'get_models'>[number];
/** GET /v1/queue: its optional `model` filter. */
export type QueueQuery = QueryOf<operations['get_queue']>;
/** An entry of GET /v1/queue: one model and priority's waiting jobs, recent waits and estimated wait. */
export type QueueEntry = DataOf<'get_queue'>[number];
/** GET /v1/audit-events: filters (action, target_id, from, to) and paging. */
export type AuditEventsQuery = QueryOf<operations['get_audit_events']>;
export type PipelinesQuery = QueryOf<operations['get_pipelines']>;
export type PipelineCreate = BodyOf<operations['post_pipelines']>;
export type PipelineResume = BodyOf<operations['post_pipelines_by_id_resume']>;
/** A pipeline record (GET /v1/pipelines/{id}): its status, and each step's job, progress, outputs and charges. */
export type Pipeline = DataOf<'get_pipelines_by_id'>;
export type BatchesQuery = QueryOf<operations['get_batches']>;
export type BatchCreate = BodyOf<operations['post_batches']>;
/** A batch record (GET /v1/batches/{id}): its status, its items counted by status, its price and what it cost so far. */
export type Batch = DataOf<'get_batches_by_id'>;
/** A row of a batch's manifest. */
export type BatchManifestRow = DataOf<'get_batches_by_id_manifest'>[number];
export type BulkActionsQuery = QueryOf<operations['get_bulk_actions']>;
export type BulkActionCreate = BodyOf<operations['post_bulk_actions']>;
/** A bulk action record (GET /v1/bulk-actions/{id}): its status and its jobs counted by outcome. */
export type BulkAction = DataOf<'get_bulk_actions_by_id'>;
/** An event of the workspace's audit log (GET /v1/audit-events, owner keys only). */
export type AuditEvent = DataOf<'get_audit_events'>[number];
/** A budget of GET /v1/budgets (`mg.budgets.list()`): its scope, period, limit, net spend, what is left and when it resets. */
export type Budget = DataOf<'get_budgets'>[number];

/** The MIME type of an upload from a file name's extension (direct uploads must declare it). */
export function mimeTypeOf(name: string): UploadMimeType | null {
  const ext = /\.([a-z0-9]+)$/i.exec(name)?.[1]?.toLowerCase();
  const types: Record<string, UploadMimeType> = {
    jpg: 'image/jpeg',
    jpeg: 'image/jpeg',
    png: 'image/png',
    webp: 'image/webp',
    mp4: 'video/mp4',
    m4v: 'video/mp4',
    mov: 'video/quicktime',
    webm: 'video/webm',
  };
  return (ext && types[ext]) || null;
}

// ------------------------------------------------------------------ options

export interface ClientOptions {
  /** Workspace API key (`mg_live_…`); omitted with `session`. */
  apiKey?: string;
  /**
   * In a browser page served by the gateway (the console): authenticate with its session cookie,
   * which the browser sends on same-origin requests, instead of a key. No Authorization header.
   */
  session?: boolean;
  /** Gateway address, e.g. http://127.0.0.1:8080 (with or without a trailing /v1). */
  baseUrl: string;
  /** How many times a 429 is retried after its `retry_after_ms` (default 2; 0 disables). */
  maxRetries?: number;
  /** Never wait longer than this for one 429 retry (default 60 s); a longer wait fails at once. */
  maxRetryDelayMs?: number;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
  /**
   * Called when an answer says the requested model is deprecated (its Deprecation header); the
   * default writes the gateway's warning to console.warn once per distinct warning.
   */
  onWarning?: (warning: ModelWarning) => void;
}

/** A deprecated model's answer, from its headers (docs/api/deprecations.md). */
export interface ModelWarning {
  /** The gateway's X-Mediagen-Warning: why the model is deprecated and which model to use instead. */
  message: string;
  /** When the model was deprecated (the Deprecation header). */
  deprecatedAt: Date | null;
  /** From when creates are refused (the Sunset header), or null while no date is set. */
  sunset: Date | null;
}

export interface RequestOptions {
  signal?: AbortSignal;
  /** Sent as Idempotency-Key; creates and uploads get a random one when not given. */
  idempotencyKey?: string;
}

export interface WaitOptions {
  /** Called with each new snapshot of the job (status, phase, percent, queue position). */
  onProgress?: (job: AnyJob) => void;
  signal?: AbortSignal;
  /** First polling interval (default 500 ms); it grows ×1.5 up to `maxPollIntervalMs` while nothing changes. */
  pollIntervalMs?: number;
  maxPollIntervalMs?: number;
  /** Use the live event stream when the gateway offers it (default true). */
  events?: boolean;
}

export interface EventsOptions {
  signal?: AbortSignal;
  /** The `id` of the last event received: the gateway sends only newer changes. */
  lastEventId?: string;
}

/** One `status` event of a job's event stream. */
export interface JobEvent<J = AnyJob> {
  /** The event id (the job's change counter), for `lastEventId` on reconnect. */
  id: string | null;
  job: J;
}

export interface WaitResult<J = AnyJob> {
  job: J;
  /** The first (or only) output URL. */
  url: string;
  /** Every output URL (several for an image job with count > 1). */
  urls: string[];
}

export interface SendOptions extends RequestOptions {
  body?: unknown;
  /** Send an Idempotency-Key (creates and uploads). */
  idempotent?: boolean;
  accept?: string;
  headers?: Record<string, string>;
}

/**
 * The client method serving each operation of the OpenAPI document (dotted path on a client).
 * `satisfies` makes tsc fail when `npm run client:types` brings an operation this table lacks.
 */
export const operationMethods = {
  get_projects: 'projects.list',
  get_actors: 'actors.list',
  get_voices: 'voices.list',
  post_upload: 'uploadFile',
  post_upload_from_url: 'uploadFromUrl',
  post_uploads: 'uploads.create',
  post_uploads_by_id_complete: 'uploads.complete',
  get_uploads_by_id: 'uploads.get',
  post_images_generate: 'images.generate',
  get_images_by_id: 'images.get',
  get_images_by_id_url: 'images.url',
  post_images_by_id_cancel: 'images.cancel',
  post_videos_generate: 'videos.generate',
  get_videos_by_id: 'videos.get',
  get_videos_by_id_url: 'videos.url',
  post_videos_by_id_cancel: 'videos.cancel',
  post_replace_actors_generations: 'replaceActors.generate',
  get_replace_actors_generations_by_id: 'replaceActors.get',
  get_replace_actors_generations_by_id_url: 'replaceActors.url',
  post_replace_actors_generations_by_id_cancel: 'replaceActors.cancel',
  post_talking_actors_generate: 'talkingActors.generate',
  get_talking_actors_by_id: 'talkingActors.get',
  get_talking_actors_by_id_url: 'talkingActors.url',
  post_talking_actors_by_id_cancel: 'talkingActors.cancel',
  get_healthz: 'health',
  get_readyz: 'ready',
  get_openapi_json: 'openapi',
  // The live event stream (GET /v1/{kind}/{id}/events).
  get_images_by_id_events: 'images.events',
  get_videos_by_id_events: 'videos.events',
  get_replace_actors_generations_by_id_events: 'replaceActors.events',
  get_talking_actors_by_id_events: 'talkingActors.events',
  // Lists and the model catalog.
  get_jobs: 'jobs.list',
  get_images: 'images.list',
  get_videos: 'videos.list',
  get_replace_actors_generations: 'replaceActors.list',
  get_talking_actors: 'talkingActors.list',
  get_models: 'models.list',
  get_queue: 'queue.get',
  get_usage: 'usage.get',
  get_budgets: 'budgets.list',
  get_balance: 'balance.get',
  put_balance_alerts: 'balance.setAlerts',
  post_api_keys: 'apiKeys.create',
  get_api_keys: 'apiKeys.list',
  delete_api_keys_by_id: 'apiKeys.revoke',
  // Deleting a finished job's outputs (retention).
  delete_images_by_id: 'images.deleteOutputs',
  delete_videos_by_id: 'videos.deleteOutputs',
  delete_replace_actors_generations_by_id: 'replaceActors.deleteOutputs',
  delete_talking_actors_by_id: 'talkingActors.deleteOutputs',
  // Deleting an upload (its links stop working).
  delete_uploads_by_id: 'uploads.delete',
  // The workspace's audit log (owner keys).
  get_audit_events: 'auditEvents.list',
  // Webhook deliveries and their replay.
  get_webhook_deliveries: 'webhookDeliveries.list',
  get_webhook_deliveries_by_id: 'webhookDeliveries.get',
  post_webhook_deliveries_by_id_redeliver: 'webhookDeliveries.redeliver',
  // Webhook endpoints the workspace manages.
  post_webhook_endpoints: 'webhookEndpoints.create',
  get_webhook_endpoints: 'webhookEndpoints.list',
  get_webhook_endpoints_by_id: 'webhookEndpoints.get',
  post_webhook_endpoints_by_id: 'webhookEndpoints.update',
  delete_webhook_endpoints_by_id: 'webhookEndpoints.delete',
  post_webhook_endpoints_by_id_rotate_secret: 'webhookEndpoints.rotateSecret',
  post_webhook_endpoints_by_id_test: 'webhookEndpoints.test',
  get_events: 'events.list',
  get_events_stream: 'events.stream',
  // A job's timeline (its receipt): the one method serves every kind's path.
  get_images_by_id_timeline: 'jobs.timeline',
  get_videos_by_id_timeline: 'jobs.timeline',
  get_replace_actors_generations_by_id_timeline: 'jobs.timeline',
  get_talking_actors_by_id_timeline: 'jobs.timeline',
  get_jobs_by_id_timeline: 'jobs.timeline',
  // Pipelines: several job creates run in order as one durable job.
  post_pipelines: 'pipelines.create',
  get_pipelines: 'pipelines.list',
  get_pipelines_by_id: 'pipelines.get',
  post_pipelines_by_id_cancel: 'pipelines.cancel',
  post_pipelines_by_id_resume: 'pipelines.resume',
  get_pipelines_by_id_receipt: 'pipelines.receipt',
  get_pipelines_by_id_events: 'pipelines.events',
  // Batches: many job creates submitted as one.
  post_batches: 'batches.create',
  get_batches: 'batches.list',
  get_batches_by_id: 'batches.get',
  post_batches_by_id_cancel: 'batches.cancel',
  post_batches_by_id_retry: 'batches.retry',
  get_batches_by_id_manifest: 'batches.manifest',
  // Bulk actions: one cancel, retry or delete over many jobs.
  post_bulk_actions: 'bulkActions.create',
  get_bulk_actions: 'bulkActions.list',
  get_bulk_actions_by_id: 'bulkActions.get',
} as const satisfies Record<keyof operations, string>;
