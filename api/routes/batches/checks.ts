// A batch's create validated whole before anything is written: the request's shape, then each item
// (its custom_id unique in the batch, its body as its kind's create endpoint validates it — model,
// settings, per-model rules, the uploads it names — and its price at priority low through the job
// service's quote; a pipeline item's steps as POST /v1/pipelines checks them, references included,
// each priced at priority low). A refusal names the item by its index and custom_id:
// `items[2] (custom_id "row-3").body.duration: seedance-1.5 supports 5, 10 seconds`,
// `items[4] (custom_id "promo").body.steps[1].body.start_frame_file_id: step "clip" outputs video, an image is expected`.
import { z } from 'zod';
import type { Queryable } from '../../../db/index.js';
import type { NewBatchItem } from '../../../db/repos/batches.js';
import type { JobService } from '../../../jobs/index.js';
import type { JobKind } from '../../../kinds/index.js';
import {
  BATCH_ITEM_PRIORITY,
  batchCreateBody,
  batchItemKinds,
  CUSTOM_ID_PATTERN,
  itemBodySchemas,
  itemExcludedFields,
  pipelineItemBody,
  type BatchItemKind,
} from '../../../shared/batches.js';
import { stepExcludedFields, type PipelineCreateBody } from '../../../shared/pipelines.js';
import { ApiError, invalidRequest } from '../../errors.js';
import { kindSpec } from '../jobs/kinds.js';
import { checkModel, createRefusal } from '../jobs/router.js';
import { checkSteps, parseWithSteps } from '../pipelines/checks.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The request's envelope: the items are checked one by one after it, so each refusal names its item. */
const envelope = batchCreateBody.extend({ items: z.array(z.unknown()).min(1) });

/** Where an item is in the request, as refusals write it. */
function itemAt(i: number, item: unknown): string {
  const id = isObject(item) && typeof item.custom_id === 'string' && CUSTOM_ID_PATTERN.test(item.custom_id) ? ` (custom_id "${item.custom_id}")` : '';
  return `items[${i}]${id}`;
}

function issuesText(error: z.ZodError, at: string): string {
  return error.issues
    .slice(0, 5)
    .flatMap((issue) => {
      const path = [at, ...issue.path.map(String)].filter(Boolean).join('.');
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.map((key) => (key in itemExcludedFields ? `${path}.${key}: ${itemExcludedFields[key]}` : `${path}: Unrecognized key: "${key}"`));
      }
      return [`${path}: ${issue.message}`];
    })
    .join('; ');
}

/** What a pipeline item's body and its steps must not carry, each with why. */
const pipelineItemExcluded = { ...stepExcludedFields, ...itemExcludedFields };

interface ParsedItem {
  customId: string;
  kind: BatchItemKind;
  /** The kind's item body; a pipeline item's: its steps and labels (shared/batches.ts pipelineItemBody). */
  body: Record<string, unknown>;
}

/** One item parsed: its custom_id, kind and body (the kind's item body), or 400 naming it. */
function parseItem(raw: unknown, i: number): ParsedItem {
  const at = itemAt(i, raw);
  if (!isObject(raw)) throw invalidRequest(`${at}: must be an object with custom_id, kind and body`);
  const head = z
    .strictObject({ custom_id: z.string().regex(CUSTOM_ID_PATTERN, 'must match ^[A-Za-z0-9_.:-]{1,64}$'), kind: z.enum(batchItemKinds), body: z.unknown() })
    .safeParse(raw);
  if (!head.success) throw invalidRequest(issuesText(head.error, at));
  const { custom_id: customId, kind } = head.data;
  if (kind === 'pipeline') return { customId, kind, body: parseWithSteps(pipelineItemBody, head.data.body, [at, 'body'], pipelineItemExcluded) };
  if (isObject(head.data.body)) {
    try {
      checkModel(kindSpec(kind), head.data.body);
    } catch (err) {
      throw prefixed(err, `${at}.body`, '');
    }
  }
  const body = itemBodySchemas[kind].safeParse(head.data.body);
  if (!body.success) throw invalidRequest(issuesText(body.error, `${at}.body`));
  return { customId, kind, body: body.data };
}

/** A kind's refusal of an item's body, its message prefixed by where the item is. */
function prefixed(err: unknown, at: string, projectId: string): unknown {
  const e = createRefusal(err, projectId);
  if (!(e instanceof ApiError) || (e.status !== 400 && e.status !== 404)) return e;
  const own = e.message.replace(/^body: /, '');
  const message = /^[A-Za-z_][A-Za-z0-9_.[\]]*: /.test(own) ? `${at}.${own}` : `${at}: ${own}`;
  return new ApiError(e.status, e.code, message, e.extra);
}

export interface ParsedBatch {
  project_id: string;
  webhook_url?: string;
  items: ParsedItem[];
}

/** The create's body parsed: the envelope, then every item (at most `maxItems`), custom_ids unique. */
export function parseBatchCreate(raw: unknown, maxItems: number): ParsedBatch {
  const parsed = envelope.safeParse(raw);
  if (!parsed.success) throw invalidRequest(issuesText(parsed.error, ''));
  const { project_id, webhook_url, items } = parsed.data;
  if (items.length > maxItems) throw invalidRequest(`items: a batch has at most ${maxItems} items (BATCH_MAX_ITEMS); this one has ${items.length}`);
  const seen = new Map<string, number>();
  const out = items.map((item, i) => {
    const p = parseItem(item, i);
    const earlier = seen.get(p.customId);
    if (earlier !== undefined)
      throw invalidRequest(`items[${i}].custom_id: "${p.customId}" is also the custom_id of items[${earlier}]; each is unique in the batch`);
    seen.set(p.customId, i);
    return p;
  });
  return { project_id, ...(webhook_url !== undefined ? { webhook_url } : {}), items: out };
}

/** A job item prepared as its kind's create prepares it, and priced at priority low (the job service's quote). */
async function checkJobItem(
  jobs: JobService,
  item: ParsedItem & { kind: JobKind },
  projectId: string,
  q: Queryable,
  workspaceId: string,
): Promise<NewBatchItem> {
  const prepared = await kindSpec(item.kind).prepare({ ...item.body, project_id: projectId }, q, workspaceId);
  const quote = await jobs.quote(q, { workspaceId, projectId, ...prepared, priority: BATCH_ITEM_PRIORITY });
  return {
    customId: item.customId,
    kind: item.kind,
    model: prepared.model,
    body: item.body,
    params: prepared.params as Record<string, unknown>,
    deadlineSeconds: (item.body.deadline_seconds as number | undefined) ?? null,
    price: quote.price,
  };
}

/**
 * A pipeline item checked as POST /v1/pipelines checks its steps (each step at priority low, the
 * batch's), and priced at their sum. Its params hold the steps as checked, which its pipeline is
 * made of when the item starts.
 */
async function checkPipelineItem(
  jobs: JobService,
  item: ParsedItem,
  projectId: string,
  q: Queryable,
  workspaceId: string,
  maxSteps: number,
): Promise<NewBatchItem> {
  const own = item.body as Pick<PipelineCreateBody, 'steps' | 'metadata' | 'tags'>;
  const atLow = own.steps.map((s) => ({ ...s, body: { ...s.body, priority: BATCH_ITEM_PRIORITY } }));
  const checked = await checkSteps(jobs, { ...own, project_id: projectId, steps: atLow } as PipelineCreateBody, q, workspaceId, maxSteps);
  return {
    customId: item.customId,
    kind: 'pipeline',
    model: checked.map((s) => s.model).join(','),
    body: item.body,
    params: { steps: checked.map(({ outputCount: _count, ...step }) => step) },
    deadlineSeconds: null,
    price: checked.reduce((n, s) => n + s.price, 0),
  };
}

/** Every item prepared as its kind's create (or a pipeline's) prepares it, and priced at priority low, in `q`. */
export async function checkItems(jobs: JobService, body: ParsedBatch, q: Queryable, workspaceId: string, maxPipelineSteps: number): Promise<NewBatchItem[]> {
  const checked: NewBatchItem[] = [];
  for (const [i, item] of body.items.entries()) {
    const at = `items[${i}] (custom_id "${item.customId}")`;
    try {
      checked.push(
        item.kind === 'pipeline'
          ? await checkPipelineItem(jobs, item, body.project_id, q, workspaceId, maxPipelineSteps)
          : await checkJobItem(jobs, { ...item, kind: item.kind }, body.project_id, q, workspaceId),
      );
    } catch (err) {
      throw prefixed(err, `${at}.body`, body.project_id);
    }
  }
  return checked;
}
