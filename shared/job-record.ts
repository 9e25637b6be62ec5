// The job record every API answer and every webhook event carries, declared once for both
// processes: its zod schemas (the gateway validates and documents with them) and `presentJob`, the
// one function that builds a record from a job row (the gateway's status, create, cancel and event
// answers; the worker's webhook payloads, from the row as the event's transaction left it).
import { z } from 'zod';
import { jobStatuses, providerNames, webhookEventNames, type JobError, type JobKind, type JobPhase, type JobStatus, type ProviderAttempt, type WebhookEventName } from './job-model.js';
import { typedParams, type StoredJobParams } from './job-params.js';

/** What presentJob reads of a job row (db/schema.ts `Job` has it all). */
export interface JobRow {
  id: string;
  kind: JobKind;
  project_id: string;
  model: string;
  status: JobStatus;
  params: StoredJobParams;
  error: JobError | null;
  created_at: Date;
  updated_at: Date;
  phase: JobPhase;
  attempt: number;
  percent: number | null;
  queue_position: number | null;
  webhook_url: string | null;
  webhook_events: WebhookEventName[] | null;
  outputs_removed_at: Date | null;
  /** The routes the job gave up (0012_provider_failover); absent on rows read without it. */
  provider_attempts?: ProviderAttempt[];
  /** What a customer's cancel kept of the price, and when it came after the submit (0015_cancel_charges). */
  price?: number;
  cancel_kept?: number | null;
  canceled_after_submit_at?: Date | null;
}

/** Every job record shows its webhook (0007_webhooks). */
const webhookRecordFields = {
  webhook_url: z.string().nullable().describe("where this job's webhook events go; null: no webhooks"),
  webhook_events: z.array(z.enum(webhookEventNames)).nullable().describe('the events delivered to webhook_url; null: no webhooks'),
};

const jobError = z.object({ code: z.string(), message: z.string() }).nullable();
const progressSchema = z.object({
  phase: z.string(),
  attempt: z.number().int(),
  percent: z.number().nullable(),
  queue_position: z.number().int().nullable(),
});
export type Progress = z.infer<typeof progressSchema>;
const status = z.enum(jobStatuses);
/** Set once the job's outputs were deleted (DELETE /v1/{kind}/{id}): the record stays, its URL answers 410. */
const outputsRemovedAt = z.number().int().optional().describe('when the outputs were deleted (ms since the Unix epoch); absent while they are kept');
const servedBy = z
  .enum(providerNames)
  .optional()
  .describe('the provider serving (or that served) this job: its first route, or the one it failed over to; "local" when the local renderer served it (its media is a placeholder, not a real model output)');
const providerAttempts = z
  .array(z.object({ provider: z.enum(providerNames), error: z.string() }))
  .optional()
  .describe('the providers this job tried and gave up before `provider`, in order, each with why (an outage, our account at that provider); absent when it never failed over. The price stays the one charged at create');
const cancelRecord = z
  .object({
    refunded: z.number().int().describe('credits refunded'),
    kept: z.number().int().describe("credits not refunded: the model's provider cost (GET /v1/models cancel_policy), when the job had been submitted to a provider that did not confirm the cancel"),
    after_submit: z.boolean().describe('whether the job had been submitted to a provider when it was canceled'),
  })
  .optional()
  .describe("what the customer's cancel refunded (error.code canceled); absent unless the job was canceled through the cancel endpoint");

/** What every job record carries beside its kind's fields, in this order. */
const statusFields = {
  status,
  error: jobError,
  created_at: z.number().int(),
  updated_at: z.number().int(),
  progress: progressSchema.optional(),
  provider: servedBy,
  provider_attempts: providerAttempts,
  cancel: cancelRecord,
  outputs_removed_at: outputsRemovedAt,
  ...webhookRecordFields,
};

export const imageJobSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  prompt: z.string(),
  model: z.string(),
  aspect_ratio: z.string(),
  count: z.number().int(),
  ...statusFields,
});
export const videoJobSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  prompt: z.string(),
  model: z.string(),
  aspect_ratio: z.string(),
  duration: z.number(),
  resolution: z.string(),
  ...statusFields,
});
export const talkingActorJobSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  actor_id: z.string(),
  voice_id: z.string(),
  script: z.string(),
  ...statusFields,
});

export type ImageJobRecord = z.infer<typeof imageJobSchema>;
export type VideoJobRecord = z.infer<typeof videoJobSchema>;
export type TalkingActorJobRecord = z.infer<typeof talkingActorJobSchema>;
/** Any job record the API answers. */
export type JobRecord = ImageJobRecord | VideoJobRecord | TalkingActorJobRecord;

/**
 * The API record of any job: the kind's fields, the status fields, the provider serving it and the
 * ones it gave up, and (unless `progress: false`) the stored progress while in flight.
 */
export function presentJob(job: JobRow, opts: { progress?: boolean } = {}): JobRecord {
  const t = typedParams(job);
  const common = {
    status: job.status,
    error: job.error ?? null,
    created_at: job.created_at.getTime(),
    updated_at: job.updated_at.getTime(),
    webhook_url: job.webhook_url ?? null,
    webhook_events: job.webhook_url ? (job.webhook_events ?? null) : null,
    provider: t.params.provider,
    ...(job.provider_attempts?.length ? { provider_attempts: job.provider_attempts.map((a) => ({ provider: a.provider, error: a.error })) } : {}),
    ...(job.cancel_kept != null && job.price !== undefined
      ? { cancel: { refunded: job.price - job.cancel_kept, kept: job.cancel_kept, after_submit: job.canceled_after_submit_at != null } }
      : {}),
    ...(job.outputs_removed_at ? { outputs_removed_at: job.outputs_removed_at.getTime() } : {}),
  };
  let record: JobRecord;
  switch (t.kind) {
    case 'image': {
      const p = t.params;
      record = { id: job.id, project_id: job.project_id, prompt: p.prompt, model: job.model, aspect_ratio: p.aspect_ratio, count: p.count, ...common };
      break;
    }
    case 'video':
    case 'replace_actor': {
      const p = t.params;
      // Rows written before prompt was stored for replace-actor jobs hold none.
      record = { id: job.id, project_id: job.project_id, prompt: p.prompt ?? '', model: job.model, aspect_ratio: p.aspect_ratio, duration: p.duration, resolution: p.resolution!, ...common };
      break;
    }
    case 'talking_actor': {
      const p = t.params;
      record = { id: job.id, project_id: job.project_id, actor_id: p.actor_id, voice_id: p.voice_id, script: p.script, ...common };
      break;
    }
  }
  if (opts.progress !== false && (job.status === 'pending' || job.status === 'generating')) {
    record.progress = { phase: job.phase, attempt: job.attempt, percent: job.percent, queue_position: job.queue_position } satisfies Progress;
  }
  return record;
}
