// The job record every API answer and every webhook event carries, declared once for both
// processes: `presentJob`, the one function that builds a record from a job row (the gateway's
// status, create, cancel and event answers; the worker's webhook payloads, from the row as the
// event's transaction left it). The record schemas are the kinds' (kinds/), their common
// status fields kinds/define.ts.
import type { z } from 'zod';
import type { JobKind } from '../kinds/index.js';
import type { JobError, JobOutput, JobPhase, JobPriority, JobStatus, ProviderAttempt, WebhookEventName } from './job-model.js';
import { outputFrame, routeFor } from './catalog.js';
import type { StoredJobParams } from './job-params.js';
import { imageKind, kindOf, talkingActorKind, videoKind } from '../kinds/index.js';
import type { progressSchema } from '../kinds/define.js';

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
  /** The routes the job gave up (0012_provider_failover). */
  provider_attempts: ProviderAttempt[];
  /** The stored outputs (their `converted_from` feeds the record's `substitution`). */
  outputs?: JobOutput[] | null;
  /** What a customer's cancel kept of the price, and when it came after the submit (0015_cancel_charges). */
  price: number;
  cancel_kept: number | null;
  canceled_after_submit_at: Date | null;
  /** The customer's deadline (0021_fair_share); null or absent: none. */
  deadline_at?: Date | null;
  /** Its priority in the queues (0021_fair_share). */
  priority: JobPriority;
  /** The sums of its ledger debits and credits (0029_receipts): the record's `charges`. */
  credits_charged: number;
  credits_refunded: number;
  /** The create's metadata and tags (0115_labels); absent: none. */
  metadata?: Record<string, string>;
  tags?: string[];
  /** The identical job this one waits for or was answered from (0145_request_reuse); null or absent: none. */
  reused_from?: string | null;
}

export type Progress = z.infer<typeof progressSchema>;
export const imageJobSchema = imageKind.record;
export const videoJobSchema = videoKind.record;
export const talkingActorJobSchema = talkingActorKind.record;
export type ImageJobRecord = z.infer<typeof imageJobSchema>;
export type VideoJobRecord = z.infer<typeof videoJobSchema>;
export type TalkingActorJobRecord = z.infer<typeof talkingActorJobSchema>;
/** Any job record the API answers. */
export type JobRecord = ImageJobRecord | VideoJobRecord | TalkingActorJobRecord;

const snapshotTimestampColumns = ['created_at', 'updated_at', 'started_at', 'finished_at', 'progress_updated_at', 'outputs_removed_at', 'deadline_at'] as const;

/** A job row stored as JSON by a trigger (`to_jsonb`: a webhook delivery's, an event's) back as a row, for presentJob. */
export function jobFromSnapshot<J extends JobRow = JobRow>(snapshot: Record<string, unknown>): J {
  const job = { ...snapshot } as Record<string, unknown>;
  for (const c of snapshotTimestampColumns) if (typeof job[c] === 'string') job[c] = new Date(job[c] as string);
  return job as unknown as J;
}

/**
 * The API record of any job: the kind's fields, the status fields, the provider serving it and the
 * ones it gave up, and (unless `progress: false`) the stored progress while in flight.
 */
export function presentJob(job: JobRow, opts: { progress?: boolean } = {}): JobRecord {
  const common = {
    status: job.status,
    error: job.error ?? null,
    created_at: job.created_at.getTime(),
    updated_at: job.updated_at.getTime(),
    webhook_url: job.webhook_url ?? null,
    webhook_events: job.webhook_url ? (job.webhook_events ?? null) : null,
    deadline_at: job.deadline_at?.getTime() ?? null,
    provider: job.params.provider,
    ...(job.provider_attempts.length ? { provider_attempts: job.provider_attempts.map((a) => ({ provider: a.provider, error: a.error })) } : {}),
    ...substitutionOf(job),
    ...(job.cancel_kept !== null
      ? { cancel: { refunded: job.price - job.cancel_kept, kept: job.cancel_kept, after_submit: job.canceled_after_submit_at !== null } }
      : {}),
    ...(job.outputs_removed_at ? { outputs_removed_at: job.outputs_removed_at.getTime() } : {}),
    ...(job.reused_from ? { reused_from: job.reused_from } : {}),
    priority: job.priority,
    charges: { charged: job.credits_charged, refunded: job.credits_refunded, net: job.credits_charged - job.credits_refunded },
    metadata: job.metadata ?? {},
    tags: job.tags ?? [],
  };
  const record = { id: job.id, project_id: job.project_id, ...kindOf(job.kind).present(job.params, job), ...common } as JobRecord;
  if (opts.progress !== false && (job.status === 'pending' || job.status === 'generating')) {
    record.progress = { phase: job.phase, attempt: job.attempt, percent: job.percent, queue_position: job.queue_position } satisfies Progress;
  }
  return record;
}

/**
 * The record's `substitution`: set when a route other than the model's first served the job, or an
 * output was re-encoded to the model's stored format; nothing for the local renderer.
 */
function substitutionOf(job: JobRow): { substitution?: NonNullable<JobRecord['substitution']> } {
  const route = routeFor(job.model);
  const provider = job.params.provider;
  if (!route || !provider || provider === 'local') return {};
  const frame = outputFrame(route, provider, job.params);
  const conversions = (job.outputs ?? []).flatMap((o, i) => [
    // A PNG answer re-encoded into the format the create asked is no substitution: every route's would be.
    ...(o.converted_from && o.converted_from !== 'image/png' ? [{ output: i + 1, from: o.converted_from, to: o.content_type }] : []),
    ...(o.scaled_from && frame ? [{ output: i + 1, from: o.scaled_from, to: `${frame.width}x${frame.height}` }] : []),
  ]);
  if (provider === route.provider && conversions.length === 0) return {};
  const modelId = job.params.provider_model_id ?? null;
  const served =
    provider === route.provider
      ? `served by ${provider}`
      : `served by ${provider}${modelId ? ` (${modelId})` : ''} instead of ${route.provider}, its first route`;
  const converted = conversions.map((c) => `output ${c.output} converted from ${c.from} to ${c.to}`);
  return {
    substitution: { provider, provider_model_id: modelId, primary: route.provider, conversions, summary: [served, ...converted].join('; ') },
  };
}

/** A create's answer: the record (without progress), or the id and status with the kind's created fields. */
export function createdAnswer(job: JobRow): Record<string, unknown> {
  const d = kindOf(job.kind);
  return d.createdFields ? { id: job.id, status: 'pending', ...d.createdFields(job.params) } : presentJob(job, { progress: false });
}
