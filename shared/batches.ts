// Batches: many job creates submitted as one (POST /v1/batches), each item any kind's create body
// (or a pipeline's steps) with a `custom_id`, run at `low` priority and at its price by a durable
// parent workflow that starts their jobs (and pipelines) at a bounded rate. Pure: the create body,
// the ids a batch derives, the record, the quote, the event and the manifest's rows, shared by the
// gateway, the activities and the document.
import { z } from 'zod';
import { idField, webhookRequestFields } from '../kinds/define.js';
import { jobKinds, kindOf, type JobKind } from '../kinds/index.js';
import { labelRequestFields } from './labels.js';
import { PIPELINE_STEPS_HARD_MAX, pipelineStepSchema, stepBodySchemas } from './pipelines.js';

/** The schema's bound on items; BATCH_MAX_ITEMS (config) is the deployment's, at most this. */
const BATCH_ITEMS_HARD_MAX = 1_000;
export const CUSTOM_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;
/** The priority every item runs at: the cheaper class (shared/catalog.ts priceAt). */
export const BATCH_ITEM_PRIORITY = 'low' as const;
/** An item's kind: a job kind, or `pipeline` (the item runs a pipeline of steps, each a job). */
export const batchItemKinds = [...jobKinds, 'pipeline'] as const;
export type BatchItemKind = (typeof batchItemKinds)[number];

export const batchStatuses = ['running', 'completed', 'canceled'] as const;
/**
 * An item's status: `waiting` (not started, nothing charged), its job's status once started
 * (`pending`, `generating`, `completed`, `failed`), or `canceled` (the batch was canceled before it
 * started: never charged).
 */
export const batchItemStatuses = ['waiting', 'pending', 'generating', 'completed', 'failed', 'canceled'] as const;
export type BatchItemStatus = (typeof batchItemStatuses)[number];

export const BATCH_COMPLETED_EVENT = 'batch.completed';

/** The fields of a kind's create body an item does not carry, each with why (the refusal's words). */
export const itemExcludedFields: Readonly<Record<string, string>> = {
  project_id: "an item's project is the batch's",
  priority: `every item runs at priority ${BATCH_ITEM_PRIORITY}`,
  webhook_url: 'an item has no webhook of its own (the batch has webhook_url)',
  reuse: 'an item is never answered from an identical request: reuse is taken by the job create endpoints only',
  webhook_events: 'an item has no webhook of its own (the batch has webhook_url)',
};

/** A body without the excluded fields, its own rules (refinements, metadata) kept. */
function withoutExcluded(body: z.ZodObject): z.ZodObject {
  const shape = Object.fromEntries(Object.entries(body.shape).filter(([field]) => !(field in itemExcludedFields)));
  const item = body.clone({ ...body._zod.def, shape }) as z.ZodObject;
  const { dependentRequired, ...meta } = z.globalRegistry.get(body) ?? {};
  const kept = Object.entries((dependentRequired ?? {}) as Record<string, string[]>).filter(
    ([field, needs]) => !(field in itemExcludedFields) && !needs.some((n) => n in itemExcludedFields),
  );
  return item.meta({ ...meta, ...(kept.length ? { dependentRequired: Object.fromEntries(kept) } : {}) });
}

/** Each kind's item body, in document order. */
export const itemBodySchemas = Object.fromEntries(
  jobKinds.map((kind) => [
    kind,
    withoutExcluded(kindOf(kind).body as unknown as z.ZodObject).describe(
      "the kind's create body without project_id (the batch's), priority and webhook fields",
    ),
  ]),
) as Record<JobKind, z.ZodObject>;

/**
 * A pipeline item's body: the steps of a pipeline create (each a kind's step body, references to
 * earlier steps' outputs included) without `priority` (every step runs at the batch's), and the
 * pipeline's labels; the project and the webhook are the batch's.
 */
export const pipelineItemBody = z
  .strictObject({
    steps: z
      .array(pipelineStepSchema((kind) => withoutExcluded(stepBodySchemas[kind])))
      .min(1)
      .max(PIPELINE_STEPS_HARD_MAX)
      .describe('the steps, run in this order (at most PIPELINE_MAX_STEPS, default 8), each a step of a pipeline create without priority'),
    ...labelRequestFields,
  })
  .describe("a pipeline create's steps and labels, without project_id (the batch's), priority and webhook fields");

const customIdField = z.string().regex(CUSTOM_ID_PATTERN, 'must match ^[A-Za-z0-9_.:-]{1,64}$').describe('your id of the item, unique in the batch');

/** An item: one branch per kind (and one for a pipeline), told apart by `kind`. */
const itemSchema = z.discriminatedUnion('kind', [
  ...jobKinds.map((kind) =>
    z.strictObject({ custom_id: customIdField, kind: z.literal(kind).describe('the job kind the item creates'), body: itemBodySchemas[kind] }),
  ),
  z.strictObject({
    custom_id: customIdField,
    kind: z.literal('pipeline').describe('the item runs a pipeline (POST /v1/pipelines) of these steps'),
    body: pipelineItemBody,
  }),
] as unknown as [z.ZodObject<{ custom_id: typeof customIdField; kind: z.ZodLiteral<BatchItemKind>; body: z.ZodObject }>]);

export const batchCreateBody = z.strictObject({
  project_id: idField,
  items: z.array(itemSchema).min(1).max(BATCH_ITEMS_HARD_MAX).describe('the items (at most BATCH_MAX_ITEMS, default 1000)'),
  webhook_url: webhookRequestFields.webhook_url.describe(
    "https URL (default port, a public host, no credentials) that receives batch.completed, signed per Standard Webhooks with the workspace's secret",
  ),
});

/** The job id of an item's attempt: deterministic, so a retried or replayed start finds the job it made and charges nothing more. */
export function itemJobId(kind: JobKind, batchId: string, position: number, attempt: number): string {
  return `${kindOf(kind).idPrefix}_${batchId.replace(/^bat_/, '')}-b${position}-a${attempt}`;
}

/**
 * The pipeline id of a pipeline item: one per item (a retry resumes it), deterministic as a job
 * item's id is. Letters and digits only after `pl_`, as a step's job id (stepJobId) reads it back;
 * longer than a random id (24 characters), so never one.
 */
export function itemPipelineId(batchId: string, position: number): string {
  return `pl_${batchId.replace(/^bat_/, '')}b${position}`;
}

const errorSchema = z.object({ code: z.string(), message: z.string() });

const batchCountsSchema = z
  .object(Object.fromEntries(batchItemStatuses.map((s) => [s, z.number().int()])) as Record<BatchItemStatus, z.ZodNumber>)
  .describe('how many items are in each status');
export type BatchCounts = Record<BatchItemStatus, number>;

export const batchRecordSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  status: z.enum(batchStatuses).describe('running until every item ended; then completed, or canceled when a cancel stopped it'),
  item_count: z.number().int(),
  counts: batchCountsSchema,
  price: z.number().int().describe("the sum of the items' quoted prices at priority low"),
  charged: z.number().int().describe("net credits spent so far by the items' jobs (charges less refunds)"),
  webhook_url: z.string().nullable(),
  created_at: z.number().int(),
  updated_at: z.number().int(),
  completed_at: z.number().int().nullable(),
  canceled_at: z.number().int().nullable(),
});
export type BatchRecord = z.infer<typeof batchRecordSchema>;

export const batchQuoteSchema = z.object({
  price: z.number().int().describe("the sum of the items' prices at priority low"),
  items: z.array(z.object({ custom_id: z.string(), price: z.number().int() })),
  available: z.number().int().describe("the workspace's credit balance now"),
  sufficient: z.boolean().describe('whether the balance covers the whole batch now (each item is charged when it starts)'),
});

/** One row of the manifest (JSONL, or CSV with the same columns, output_urls joined by spaces). */
export const manifestRowSchema = z.object({
  custom_id: z.string(),
  job_id: z.string().nullable().describe('null for an item never started (canceled), refused at its charge, or a pipeline item'),
  status: z.enum(batchItemStatuses),
  output_urls: z.array(z.string()),
  credits: z.number().int().describe('net credits the item cost (its charge less its refunds)'),
  error: errorSchema.nullable(),
  pipeline_id: z
    .string()
    .nullable()
    .describe("a pipeline item's pipeline (GET /v1/pipelines/{id}: each step's jobs); its output_urls are its last step's outputs; null for a job item"),
});
export type ManifestRow = z.infer<typeof manifestRowSchema>;
/** The CSV's columns: pipeline_id last, so a reader of the first six by position reads what it did before pipeline items. */
export const MANIFEST_COLUMNS = ['custom_id', 'job_id', 'status', 'output_urls', 'credits', 'error_code', 'pipeline_id'] as const;

/** What batch.completed carries (db/repos/batches.ts writes it when every item ended). */
export const batchEventDataSchema = z.object({
  id: z.string().describe('the batch id'),
  project_id: z.string(),
  status: z.enum(batchStatuses),
  item_count: z.number().int(),
  counts: batchCountsSchema,
  charged: z.number().int(),
  manifest: z.string().describe('the path of its manifest (GET, with ?format=jsonl or csv)'),
});
