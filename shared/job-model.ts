// The job vocabulary both processes and the workflows share, declared once: statuses, phases and
// provider names (the live ones from the provider list, providers/index.ts). Pure data, so
// workflow code may import it. The kind names come from the kinds' models list (kinds/models.ts,
// pure data), not from their descriptors, so this stays free of zod for the workflow bundle.
import { liveProviderNames, type LiveProviderName } from '../providers/index.js';
import { jobKindNames } from '../kinds/models.js';

/**
 * The job kind names, in document order: the kinds of the models' list (kinds/models.ts), which the
 * catalog reads without the descriptors that read the catalog. Each has its descriptor in
 * kinds/<kind>/ (the kinds' list must name exactly these: a compile-time check).
 */
export { jobKindNames };
export type JobKindName = (typeof jobKindNames)[number];

type CamelCase<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<CamelCase<T>>}` : S;
/** The workflow type of a kind's jobs. */
export type KindWorkflowType<K extends string> = `${CamelCase<K>}Generation`;

/**
 * The workflow type a kind's jobs run as: its name in camel case, then `Generation` (image →
 * imageGeneration, replace_actor → replaceActorGeneration). One type per kind, so operators filter
 * them apart in the Web UI; all run the one generation workflow (workflows/kinds.ts).
 */
export function kindWorkflowType<K extends string>(kind: K): KindWorkflowType<K> {
  return `${kind.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())}Generation` as KindWorkflowType<K>;
}

export const jobStatuses = ['pending', 'generating', 'completed', 'failed'] as const;
export type JobStatus = (typeof jobStatuses)[number];

/** How soon a job's tasks leave the queues it waits in, before other jobs of lower priority. */
export const jobPriorities = ['high', 'normal', 'low'] as const;
export type JobPriority = (typeof jobPriorities)[number];

/** What a job is doing now, as its activities store it and its workflow's `progress` query reports it. */
export const jobPhases = ['queued', 'fetching_inputs', 'submitting', 'generating', 'storing_outputs', 'completed', 'failed', 'canceled'] as const;
export type JobPhase = (typeof jobPhases)[number];

export const providerNames = ['local', ...liveProviderNames] as const;
export type ProviderName = 'local' | LiveProviderName;
export type { LiveProviderName };

/**
 * How a job is served, resolved once when it is created (gateway) and stored with it: the adapter,
 * the provider's own model id (absent for the local renderer) and the provider's time budget. The
 * job's price is the `price` column beside it. Stored flat in the job's `params` (see
 * shared/job-params.ts).
 */
export interface JobRoute {
  /** The provider serving the job now: the first route, or the one failover moved it to. */
  provider: ProviderName;
  provider_model_id?: string;
  deadline_seconds: number;
  /** Every live route the job may use, in order, when failover is on and the model has more than one. */
  routes?: RouteChoice[];
}

/** One live route of a model: the provider and its own model id. */
export interface RouteChoice {
  provider: LiveProviderName;
  provider_model_id: string;
}

/** A route a job gave up (failover): the provider and why (the job record's `provider_attempts`). */
export interface ProviderAttempt {
  provider: ProviderName;
  error: string;
  /** The request the route had made, stored so a retried give-up still cancels it (never shown to customers). */
  ref?: Record<string, unknown>;
}

/**
 * Which workflow run holds the job and since when (epoch ms), as the steps that claim it answer:
 * the pipeline measures the model's deadline from the claim of its own run.
 */
export interface RunClaim {
  runId: string;
  at: number;
}

/** A stored output of a completed job. */
export interface JobOutput {
  key: string;
  content_type: string;
  size: number;
  /** The type the provider answered when the stored file was re-encoded from it (activities/providers/output-conform.ts). */
  converted_from?: string;
  /** The frame ("832x480") the provider answered when the stored video was scaled to the asked one. */
  scaled_from?: string;
}

/** Why a job failed (`generation_failed`, or `canceled`). */
export interface JobError {
  code: string;
  message: string;
}

/** The job events a webhook can ask for (a job's `webhook_events`): its status moves past pending. */
export const webhookEventNames = ['generating', 'completed', 'failed'] as const;
export type WebhookEventName = (typeof webhookEventNames)[number];
