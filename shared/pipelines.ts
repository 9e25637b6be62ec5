// Pipelines: several job creates run in order as one durable job, a step's upload inputs possibly
// naming an earlier step's output (`{"from": "<step id>", "output": <index>}`). Pure: the create
// body, the reference rules (what a step outputs, which fields may hold a reference), the ids a
// pipeline derives (its steps' job ids, their outputs' upload ids) and the record's schema, shared
// by the gateway (validation, records), the activities (resolution) and the document.
import { z } from 'zod';
import { idField, webhookRequestFields } from '../kinds/define.js';
import { jobKinds, kindOf, type JobKind } from '../kinds/index.js';
import { jobStatuses } from './job-model.js';
import { labelRecordFields, labelRequestFields } from './labels.js';

const STEP_ID_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;
/** The schema's bound on steps; PIPELINE_MAX_STEPS (config) is the deployment's, at most this. */
export const PIPELINE_STEPS_HARD_MAX = 32;

export const pipelineStatuses = ['pending', 'running', 'completed', 'failed'] as const;
export type PipelineStatus = (typeof pipelineStatuses)[number];
/** A step's status: `waiting` (its job not created yet), its job's status, or `skipped` (a canceled pipeline's later steps). */
const stepStatuses = ['waiting', ...jobStatuses, 'skipped'] as const;
export type StepStatus = (typeof stepStatuses)[number];

export const pipelineWebhookEventNames = ['pipeline.completed', 'pipeline.failed', 'pipeline.step.completed', 'pipeline.step.failed'] as const;
export type PipelineWebhookEventName = (typeof pipelineWebhookEventNames)[number];

/** A reference to an earlier step's output, in place of an upload id. */
const stepReferenceSchema = z.strictObject({
  from: z.string().regex(STEP_ID_PATTERN).describe('the id of an earlier step'),
  output: z.number().int().min(0).max(15).describe("the index of that step's output (0 for a step with one output)"),
});
export type StepReference = z.infer<typeof stepReferenceSchema>;

/** The fields of a kind's create body a step does not carry, each with why (the refusal's words). */
export const stepExcludedFields: Readonly<Record<string, string>> = {
  project_id: "a step's project is the pipeline's",
  webhook_url: 'a step has no webhook of its own (the pipeline has webhook_url)',
  reuse: 'a step is never answered from an identical request: reuse is taken by the job create endpoints only',
  webhook_events: 'a step has no webhook of its own (the pipeline has webhook_url)',
};

/** The same schema with the original's metadata (its description), which a rebuilt schema does not inherit. */
function keepMeta<S extends z.ZodType>(original: z.ZodType, rebuilt: S): S {
  const meta = z.globalRegistry.get(original);
  return meta ? rebuilt.meta(meta) : rebuilt;
}

/** An upload id field that also takes a reference: the value, or each element of a list, either the id or `{from, output}`. */
function orReference(field: z.ZodType): z.ZodType {
  if (field instanceof z.ZodOptional) return keepMeta(field, orReference(field.unwrap() as z.ZodType).optional());
  // The list keeps its own checks (its maximum length): only its element changes.
  if (field instanceof z.ZodArray)
    return keepMeta(field, field.clone({ ...field._zod.def, element: z.union([field.element as z.ZodType, stepReferenceSchema]) }));
  return z.union([field, stepReferenceSchema]);
}

/**
 * A step's body of a kind, derived from the kind's create body so a new field appears here by
 * itself: its fields but the excluded ones, each upload input (referenceableFields) also taking a
 * reference, the body's own rules (its refinements, and their JSON Schema in its metadata) kept,
 * and the metadata's rules about the excluded fields dropped.
 */
function stepBodyOf(kind: JobKind): z.ZodObject {
  const body = kindOf(kind).body as unknown as z.ZodObject;
  const referenceable = new Set(referenceableFields(kind).map((r) => r.field));
  const shape = Object.fromEntries(
    Object.entries(body.shape)
      .filter(([field]) => !(field in stepExcludedFields))
      .map(([field, schema]) => [field, referenceable.has(field) ? orReference(schema as z.ZodType) : (schema as z.ZodType)]),
  );
  const step = body.clone({ ...body._zod.def, shape }) as z.ZodObject;
  const { dependentRequired, ...meta } = z.globalRegistry.get(body) ?? {};
  const kept = Object.entries((dependentRequired ?? {}) as Record<string, string[]>).filter(
    ([field, needs]) => !(field in stepExcludedFields) && !needs.some((n) => n in stepExcludedFields),
  );
  return step.meta({ ...meta, ...(kept.length ? { dependentRequired: Object.fromEntries(kept) } : {}) });
}

const STEP_BODY_DESCRIPTION =
  "the kind's create body without project_id (the pipeline's) and without webhook fields; an upload id field (start_frame_file_id, an element of reference_file_ids, video_file_id, …) " +
  'may instead be a reference {"from": "<earlier step id>", "output": <index>} to that step\'s output, of the media type the field takes';

/** Each kind's step body, in document order: what a step of the kind (and a resume of such a step) is parsed with. */
export const stepBodySchemas = Object.fromEntries(jobKinds.map((kind) => [kind, stepBodyOf(kind).describe(STEP_BODY_DESCRIPTION)])) as Record<
  JobKind,
  z.ZodObject
>;

const stepIdField = z.string().regex(STEP_ID_PATTERN, 'must match ^[a-z][a-z0-9_-]{0,31}$').describe('the step id, unique in the pipeline');

/** A step: one branch per kind, told apart by `kind`, whose `body` is `bodyOf(kind)` (a batch's pipeline item drops `priority` from it). */
export function pipelineStepSchema(bodyOf: (kind: JobKind) => z.ZodObject) {
  return z.discriminatedUnion(
    'kind',
    jobKinds.map((kind) =>
      z.strictObject({ id: stepIdField, kind: z.literal(kind).describe('the job kind the step creates'), body: bodyOf(kind) }),
    ) as unknown as [z.ZodObject<{ id: typeof stepIdField; kind: z.ZodLiteral<JobKind>; body: z.ZodObject }>],
  );
}

const stepSchema = pipelineStepSchema((kind) => stepBodySchemas[kind]);

export const pipelineCreateBody = z
  .strictObject({
    project_id: idField,
    steps: z.array(stepSchema).min(1).max(PIPELINE_STEPS_HARD_MAX).describe('the steps, run in this order (at most PIPELINE_MAX_STEPS, default 8)'),
    webhook_url: webhookRequestFields.webhook_url.describe(
      "https URL (default port, a public host, no credentials) that receives this pipeline's events, signed per Standard Webhooks with the workspace's secret",
    ),
    webhook_events: z
      .array(z.enum(pipelineWebhookEventNames))
      .min(1)
      .max(pipelineWebhookEventNames.length)
      .optional()
      .describe('the events to deliver (needs webhook_url); default ["pipeline.completed", "pipeline.failed"]'),
    ...labelRequestFields,
  })
  .meta({ dependentRequired: { webhook_events: ['webhook_url'] } });
export type PipelineCreateBody = z.infer<typeof pipelineCreateBody>;

export const pipelineResumeBody = z.strictObject({
  body: z
    .union(jobKinds.map((kind) => stepBodySchemas[kind]) as unknown as [z.ZodObject, ...z.ZodObject[]])
    .optional()
    .describe(
      "the failed step's new body: a step body of the failed step's kind (validated as at create, references too; a body of another kind is refused); absent: the same body",
    ),
});

/** The media type a step of the kind outputs. */
export function outputTypeOf(kind: JobKind): 'image' | 'video' {
  return kind === 'image' ? 'image' : 'video';
}

/** How many outputs a step makes: an image step its `count`, any other one. */
export function outputCountOf(kind: JobKind, params: Record<string, unknown>): number {
  return kind === 'image' ? Number(params.count ?? 1) : 1;
}

/** The kind's fields that take upload ids (so may take references), with the media type each expects. */
export function referenceableFields(kind: JobKind): { field: string; type: 'image' | 'video' }[] {
  return Object.entries(kindOf(kind).inputs ?? {})
    .filter(([, input]) => input.from === 'upload')
    .map(([field, input]) => ({ field, type: input.type }));
}

/** Where a reference sits in a step's params: a field, and the element index for a list field. */
export interface StoredReference extends StepReference {
  field: string;
  index: number | null;
}

/** The stand-in a reference holds in a step's stored params until its step runs (never a valid upload id: uploads are `upl_…`). */
export function referencePlaceholder(ref: StepReference): string {
  return `@step:${ref.from}:${ref.output}`;
}

/** The params with every reference replaced by the upload id `uploadIdOf` gives for it. */
export function resolveReferences(
  params: Record<string, unknown>,
  refs: StoredReference[],
  uploadIdOf: (ref: StepReference) => string,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...params };
  for (const ref of refs) {
    const id = uploadIdOf(ref);
    if (ref.index === null) out[ref.field] = id;
    else out[ref.field] = (out[ref.field] as unknown[]).map((v, i) => (i === ref.index ? id : v));
  }
  return out;
}

/** The job id of a step's attempt: deterministic, so a retried or replayed activity finds the job it made. */
export function stepJobId(kind: JobKind, pipelineId: string, position: number, attempt: number): string {
  return `${kindOf(kind).idPrefix}_${pipelineId.replace(/^pl_/, '')}-s${position}-a${attempt}`;
}

/** The pipeline a step's job id names (stepJobId read back), or null for a job no pipeline step made (random ids have no `-`). */
export function pipelineIdOfStepJob(jobId: string): string | null {
  const m = /^[a-z]+_([a-z0-9]+)-s[0-9]+-a[0-9]+$/.exec(jobId);
  return m ? `pl_${m[1]}` : null;
}

/** The pipeline, step position and attempt a step's job id names (stepJobId read back), or null for a job no pipeline step made. */
export function stepOfJob(jobId: string): { pipelineId: string; position: number; attempt: number } | null {
  const m = /^[a-z]+_([a-z0-9]+)-s([0-9]+)-a([0-9]+)$/.exec(jobId);
  return m ? { pipelineId: `pl_${m[1]}`, position: Number(m[2]), attempt: Number(m[3]) } : null;
}

/** The upload id an output of a step's job is registered under (one per output, whatever the retries). */
export function stepOutputUploadId(jobId: string, index: number): string {
  return `upl_${jobId}-o${index}`;
}

const errorSchema = z.object({ code: z.string(), message: z.string() });

const pipelineStepRecordSchema = z.object({
  id: z.string(),
  kind: z.enum(jobKinds),
  model: z.string(),
  status: z.enum(stepStatuses).describe("`waiting` until its job is created, then its job's status; `skipped`: a canceled pipeline never ran it"),
  job_id: z.string().nullable().describe("the step's current job (its own endpoints answer for it)"),
  jobs: z.array(z.string()).describe("every attempt's job, oldest first"),
  progress: z
    .object({ phase: z.string(), percent: z.number().nullable() })
    .nullable()
    .describe("the current job's progress while it runs (phase `checkpointing`: the job is done and the step is taking its outputs)"),
  outputs: z
    .array(z.object({ url: z.string(), media_type: z.string(), upload_id: z.string() }))
    .describe('once the step completed: its outputs, each also registered as an upload of the workspace (upload_id)'),
  error: errorSchema.nullable(),
  price: z.number().int().describe('credits the step was quoted'),
  charged: z.number().int().describe("credits charged for the step's jobs"),
  refunded: z.number().int().describe("credits refunded for the step's jobs"),
});

export const pipelineRecordSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  status: z.enum(pipelineStatuses),
  error: errorSchema.nullable().describe("why it failed: the failed step's error, or code `canceled`"),
  price: z.number().int().describe("the sum of the steps' quoted prices"),
  charged: z.number().int().describe('net credits spent so far (charges less refunds)'),
  webhook_url: z.string().nullable(),
  webhook_events: z.array(z.enum(pipelineWebhookEventNames)).nullable(),
  created_at: z.number().int(),
  updated_at: z.number().int(),
  completed_at: z.number().int().nullable(),
  steps: z.array(pipelineStepRecordSchema),
  ...labelRecordFields,
});
export type PipelineRecord = z.infer<typeof pipelineRecordSchema>;

export const pipelineQuoteSchema = z.object({
  price: z.number().int().describe("the sum of the steps' prices"),
  steps: z.array(z.object({ id: z.string(), price: z.number().int() })),
  available: z.number().int().describe("the workspace's credit balance now"),
  sufficient: z.boolean().describe('whether the balance covers the whole pipeline now (each step is charged when it starts)'),
});

/** What a pipeline's webhook event carries (db/repos/pipeline-events.ts writes it at the move). */
export const pipelineEventDataSchema = z.object({
  id: z.string().describe('the pipeline id'),
  project_id: z.string(),
  status: z.enum(pipelineStatuses).describe('the pipeline status after the move'),
  error: errorSchema.nullable(),
  step: z
    .object({ id: z.string(), kind: z.enum(jobKinds), status: z.enum(stepStatuses), job_id: z.string().nullable(), error: errorSchema.nullable() })
    .optional()
    .describe('the step of a pipeline.step.* event'),
  ...labelRecordFields,
});
