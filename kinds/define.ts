// What every job kind's descriptor shares: the descriptor's shape (`KindDescriptor`), the fields
// every create body takes (webhooks) and the ones several do (ids, prompt, aspect ratio, https
// URL), and the status fields every job record carries beside its kind's own. Pure zod, no I/O:
// the gateway, the workers and the scripts read it alike.
import { z } from 'zod';
import { jobPriorities, jobStatuses, kindWorkflowType, providerNames, webhookEventNames, type KindWorkflowType } from '../shared/job-model.js';
import type { InputFile, ProviderRequest } from '../shared/provider-types.js';
import type { ModelRoute, RequestRule } from '../shared/catalog.js';
import type { GenerationControl } from '../shared/generation-controls.js';
import type { OutputFormat } from '../shared/catalog/types.js';
import { labelRecordFields, labelRequestFields } from '../shared/labels.js';
import { NOT_BLANK_PATTERN } from '../shared/text-patterns.js';

/**
 * For the document: what every URL the service fetches or posts to must look like before its host is
 * resolved — https, the default port (no `:`), no credentials (no `@`), and a host whose last label
 * starts with a letter (a name, never an IP literal such as `0` or `10.1`, which URL parsing reads as
 * IPv4). Whether the name resolves to a public address is checked when it is used: that, no pattern
 * can say.
 */
export const PUBLIC_HTTPS_URL_PATTERN = '^https://(?:[0-9A-Za-z-]+\\.)*[A-Za-z][0-9A-Za-z-]*(?:[/?#][!-~]*)?$';

/** The bounds of a create's `deadline_seconds`: at least a provider round trip, at most a week. */
const MIN_DEADLINE_SECONDS = 10;
const MAX_DEADLINE_SECONDS = 7 * 24 * 3600;

/** Request fields of every create schema. */
export const webhookRequestFields = {
  webhook_url: z
    .string()
    .min(10)
    .max(2048)
    // The document states what the server checks first: an absolute http(s) URL with a host and no
    // credentials ([0-9A-Za-z] and the URL punctuation, as other regex engines read classes differently).
    .regex(/^https?:\/\/[0-9A-Za-z._~%!$&'()*+,;=:[\]-]+(?:[/?#][!-~]*)?$/, 'must be an https URL with a host and no credentials')
    .refine((v) => URL.canParse(v), 'must be a URL')
    // What production accepts (https, a public name, the default port); the http loopback receivers
    // of test deployments are an exception the document leaves out.
    .meta({ pattern: PUBLIC_HTTPS_URL_PATTERN })
    .optional()
    .describe(
      "https URL (default port, a public host, no credentials) that receives this job's events, signed per Standard Webhooks with the workspace's secret; " +
        'http is accepted only by test deployments, for loopback receivers',
    ),
  webhook_events: z
    .array(z.enum(webhookEventNames))
    .min(1)
    .max(webhookEventNames.length)
    .optional()
    .describe('the events to deliver (needs webhook_url); default ["completed", "failed"]'),
  deadline_seconds: z
    .number()
    .int()
    .min(MIN_DEADLINE_SECONDS)
    .max(MAX_DEADLINE_SECONDS)
    .optional()
    .describe(
      `seconds from the create after which the job is canceled (${MIN_DEADLINE_SECONDS}–${MAX_DEADLINE_SECONDS}, 7 days): not yet submitted to its provider then, it is never submitted and refunded in full; ` +
        'running at its provider then, it is canceled there and refunded as a cancel is (all but the provider cost). Either way it fails with error code deadline_exceeded; absent: no deadline',
    ),
  priority: z
    .enum(jobPriorities)
    .optional()
    .describe(
      "the order the job's tasks leave the queues it waits in: high before every normal and low task (only for a workspace allowed it, else 403 priority_not_allowed), " +
        "low only when no normal one waits, and cheaper where the model's price says so (GET /v1/models price.low_priority_discount); default normal",
    ),
  reuse: z
    .boolean()
    .optional()
    .describe(
      "true: answer this request from an identical one of the workspace (same kind, model, parameters, seed and input files' content) instead of generating again: while that one runs, this job waits for it; once it completed, this job completes with copies of its outputs at the reuse price (docs/api/reuse.md). false: always generate. Default: the workspace's setting (off unless an operator turned it on). Not taken with URL inputs (their content is known only when the job runs)",
    ),
  ...labelRequestFields,
};

/** For the document: webhook_events only beside webhook_url (merged into each create schema's meta). */
export const webhookFieldRules = { dependentRequired: { webhook_events: ['webhook_url'] } };

export const idField = z.string().min(1).max(100);
export const promptField = z.string().trim().min(1, 'must not be empty').max(4000, 'must be at most 4000 characters').meta({ pattern: NOT_BLANK_PATTERN });
export const aspectRatio3 = z.enum(['1:1', '9:16', '16:9']);
export const httpsUrlField = z
  .string()
  .max(2048)
  .refine((v) => URL.canParse(v) && new URL(v).protocol === 'https:', 'must be an https URL')
  .meta({ pattern: PUBLIC_HTTPS_URL_PATTERN });

/** The create answer of the kinds that answer with the id alone (their record's fields come later). */
export const creationResult = z.object({ id: z.string(), status: z.literal('pending') });

/** Every job record shows its webhook (0007_webhooks). */
const webhookRecordFields = {
  webhook_url: z.string().nullable().describe("where this job's webhook events go; null: no webhooks"),
  webhook_events: z.array(z.enum(webhookEventNames)).nullable().describe('the events delivered to webhook_url; null: no webhooks'),
};

const priorityRecordField = z.enum(jobPriorities).describe("the job's priority in the queues it waits in (high, normal or low)");

const jobError = z.object({ code: z.string(), message: z.string() }).nullable();
export const progressSchema = z.object({
  phase: z.string(),
  attempt: z.number().int(),
  percent: z.number().nullable(),
  queue_position: z
    .number()
    .int()
    .nullable()
    .describe(
      "while the job waits in this service's queues (not yet submitted to its provider): its place in its workspace's share of the provider's queue, 1 = next (the workspace's waiting jobs of a higher priority, and of its priority created before it, go first); once submitted: the provider's own queue position when it reports one; else null",
    ),
});
/** Set once the job's outputs were deleted (DELETE /v1/{kind}/{id}): the record stays, its URL answers 410. */
/** The customer's deadline (a create's `deadline_seconds`) as a moment. */
const deadlineAt = z
  .number()
  .int()
  .nullable()
  .describe('when the job is canceled unless it has completed (ms since the Unix epoch): its create time plus its deadline_seconds; null: no deadline');
const outputsRemovedAt = z.number().int().optional().describe('when the outputs were deleted (ms since the Unix epoch); absent while they are kept');
const servedBy = z
  .enum(providerNames)
  .optional()
  .describe(
    'the provider serving (or that served) this job: its first route, or the one it failed over to; "local" when the local renderer served it (its media is a placeholder, not a real model output)',
  );
const providerAttempts = z
  .array(z.object({ provider: z.enum(providerNames), error: z.string() }))
  .optional()
  .describe(
    'the providers this job tried and gave up before `provider`, in order, each with why (an outage, our account at that provider); absent when it never failed over. The price stays the one charged at create',
  );
const substitution = z
  .object({
    provider: z.enum(providerNames).describe('the provider that served the job'),
    provider_model_id: z.string().nullable().describe("that provider's own model id"),
    primary: z.enum(providerNames).describe("the model's first route in the catalog (GET /v1/models)"),
    conversions: z
      .array(
        z.object({
          output: z.number().int().describe('the output, from 1'),
          from: z.string().describe('what the provider answered: a media type (image/jpeg), or a video frame (832x480)'),
          to: z.string().describe("what was stored: the image's format (image/png unless the create asked output_format), or the asked frame (720x1280)"),
        }),
      )
      .describe(
        'outputs re-encoded so the stored output is the same whatever the route: images as PNG; a video of a route that documents no frame scaled to the asked one',
      ),
    summary: z.string().describe('the same in words'),
  })
  .optional()
  .describe(
    "how the job was served where it differs from the model's first route: another route (a second provider of the same model, which stores the same format, aspect ratio and resolution) or an output converted; absent otherwise",
  );
const cancelRecord = z
  .object({
    refunded: z.number().int().describe('credits refunded'),
    kept: z
      .number()
      .int()
      .describe(
        "credits not refunded: the model's provider cost (GET /v1/models cancel_policy), when the job had been submitted to a provider that did not confirm the cancel",
      ),
    after_submit: z.boolean().describe('whether the job had been submitted to a provider when it was canceled'),
  })
  .optional()
  .describe(
    "what the customer's cancel refunded (error.code canceled), or the cancel its deadline made (error.code deadline_exceeded); absent unless the job was canceled through the cancel endpoint or by its deadline",
  );

const charges = z
  .object({
    charged: z.number().int().describe("credits taken for the job: its price at create, and any charge again (an operator's reset reviving it)"),
    refunded: z.number().int().describe('credits given back: a failure, a cancel (all but what it kept), a cancel the provider confirmed'),
    net: z.number().int().describe('charged minus refunded: what the job costs the workspace now'),
  })
  .describe("the job's credits as its rows of the workspace's ledger sum them, exactly; GET {base}/{id}/timeline says when and why each moved");

/** What every job record carries beside its kind's fields, in this order. */
export const statusFields = {
  status: z.enum(jobStatuses),
  error: jobError,
  created_at: z.number().int(),
  updated_at: z.number().int(),
  progress: progressSchema.optional(),
  provider: servedBy,
  provider_attempts: providerAttempts,
  substitution,
  cancel: cancelRecord,
  outputs_removed_at: outputsRemovedAt,
  reused_from: z
    .string()
    .optional()
    .describe(
      'the identical earlier job (reuse: true) this one waits for while pending, or whose outputs it was answered from once completed (its own copies, charged the reuse price); absent when the job generates itself',
    ),
  ...webhookRecordFields,
  deadline_at: deadlineAt,
  priority: priorityRecordField,
  charges,
  ...labelRecordFields,
};

/** A job record: its id and project, the kind's own fields, then the status fields. */
export const jobRecordSchema = <S extends z.ZodRawShape>(fields: S) => z.object({ id: z.string(), project_id: z.string(), ...fields, ...statusFields });

/** A params key naming input files of a job: the gateway checks them at create, the worker resolves them into the provider request. */
export interface InputParam {
  /** `upload`: a file upload id (or a list of them) of the job's workspace; `url`: an https URL fetched into our store when the job starts. */
  from: 'upload' | 'url';
  /** The file type the input must be. */
  type: 'image' | 'video';
  /** Its role in the provider request. */
  role: InputFile['role'];
}

/** A create body field the gateway checks against the model's catalog route (its default when absent). */
export type RouteCheck = 'aspect_ratio' | 'duration' | 'resolution';

/** What the gateway's create checks resolved, for a kind's `toParams`. */
export interface Checked {
  route: ModelRoute;
  /** The `routeChecks` fields, defaults resolved. */
  aspect_ratio?: string;
  duration?: number;
  resolution?: string;
  /** What the kind's database hook resolved (api/routes/jobs/kinds.ts), e.g. a default voice. */
  refs: Readonly<Record<string, string>>;
}

/** What a kind's `request` is given beside its params (activities/jobs/io.ts builds it). */
export interface RequestContext {
  /** The job's declared inputs that its params name, resolved into our store, in declaration order. */
  inputs: InputFile[];
  /** A stored actor (null: deleted since the create). */
  actor(id: string): Promise<{ referenceImageKey: string } | null>;
  /** A stored voice (null: deleted since the create). */
  voice(id: string): Promise<NonNullable<ProviderRequest['voice']> | null>;
  /** Ends the job, not retried: an input it needs is gone. */
  unavailable(message: string): never;
}

/** A kind's part of the provider request: the common fields (job, model, route) are added around it; `inputs` defaults to the context's. */
export type KindRequest = Omit<ProviderRequest, 'jobId' | 'kind' | 'model' | 'route' | 'providerModelId' | 'inputs'> & { inputs?: InputFile[] };

/**
 * One job kind, declared once: its names (paths, list, id prefix, workflow type, tag), its models,
 * its create body, what its jobs store (`params`, defaults resolved) and how its record shows them.
 * The gateway adds what needs the database (api/routes/jobs/kinds.ts `prepare`).
 */
export interface KindDescriptor<
  K extends string = string,
  B extends z.ZodType = z.ZodType,
  P extends z.ZodObject = z.ZodObject,
  R extends z.ZodObject = z.ZodObject,
> {
  kind: K;
  /** Base of the status, URL, cancel and list paths. */
  base: string;
  createPath: string;
  /** The kind's list name in list cursors (`<list>.<created_at µs>.<id>`). */
  list: string;
  /** Prefix of the kind's job ids (before `_`). */
  idPrefix: string;
  /** The kind's workflow type, derived from its name (shared/job-model.ts kindWorkflowType); saved histories replay by it. */
  workflowType: string;
  /** The document's tag of the kind's operations. */
  tag: string;
  models: readonly string[];
  /** The generation controls its create body takes (shared/generation-controls.ts); none: []. */
  controls: readonly GenerationControl[];
  /**
   * What its jobs store: the formats an output may have (GET /v1/models `output_formats`), and whether
   * a job may store more than one (its GET …/url answer then lists them all as `urls`).
   */
  outputs: { formats: readonly OutputFormat[]; many: boolean };
  /** The create request body. */
  body: B;
  /**
   * The params keys that name input files, in the provider request's order. Upload ids (one, or a
   * list) are checked at create (their file type) and kept while the job is in flight; URLs are
   * fetched when the job starts.
   */
  inputs?: Readonly<Record<string, InputParam>>;
  /** What a job of the kind stores in its `params` column, beside its route (shared/job-params.ts). */
  params: P;
  /** The create body fields checked against the model's route, in this order (the gateway's `prepare`). */
  routeChecks?: readonly RouteCheck[];
  /**
   * The kind's rules over its inputs, each with its refusal (the quote's 400) and its JSON Schema (the
   * body's per-model branches), so the two cannot part (kinds/video/rules.ts).
   */
  requestRules?: readonly RequestRule[];
  /** The params a checked create body stores. */
  toParams(body: z.output<B>, checked: Checked): z.infer<P>;
  /** The job record GET, the lists, the events and the webhooks answer with. */
  record: R;
  /** The create answer: `record` (without progress), or `{ id, status, ...createdFields }`. */
  createResult: z.ZodType;
  /** The create answer's fields beside id and status; absent: the create answers the whole record. */
  createdFields?(params: z.infer<P>): Record<string, unknown>;
  /** The kind's own record fields (between project_id and the status fields) of a stored job. */
  present(params: z.infer<P>, job: { model: string }): Record<string, unknown>;
  /** The provider request's fields of a stored job (the worker adds the job, model and route). */
  request(params: z.infer<P>, ctx: RequestContext): KindRequest | Promise<KindRequest>;
}

/** A kind's params keys that hold file upload ids. */
export function uploadParamsOf(d: Pick<KindDescriptor, 'inputs'>): string[] {
  return Object.entries(d.inputs ?? {})
    .filter(([, input]) => input.from === 'upload')
    .map(([key]) => key);
}

/** A kind's descriptor, its workflow type derived from its name. */
export const defineKind = <K extends string, B extends z.ZodType, P extends z.ZodObject, R extends z.ZodObject>(
  d: Omit<KindDescriptor<K, B, P, R>, 'workflowType'>,
): KindDescriptor<K, B, P, R> & { workflowType: KindWorkflowType<K> } => ({ ...d, workflowType: kindWorkflowType(d.kind) });
