// A pipeline's create (and a resume's new body) validated whole before anything is written: the
// request parsed with the published schema (shared/pipelines.ts: each step's body is its kind's
// step body), its refusals worded as the checks below word theirs; then each step's body as its
// kind's create endpoint validates it (model, settings, per-model rules, the
// uploads it names, its route and price, through the same kind spec and job service quote), and
// each reference to an earlier step's output (the step exists and runs earlier, the output index is
// within what it makes, the media type is the field's). A refusal names the step and the field:
// `steps[2].body.start_frame_file_id: step "clip" outputs video, an image is expected`.
import { mergeLabels } from '../../../shared/labels.js';
import type { z } from 'zod';
import type { Queryable } from '../../../db/index.js';
import type { NewPipelineStep } from '../../../db/repos/pipelines.js';
import type { JobService } from '../../../jobs/index.js';
import { highPriorityAllowed } from '../../../db/repos/workspace-priority.js';
import type { JobPriority } from '../../../shared/job-model.js';
import { jobKinds, type JobKind } from '../../../kinds/index.js';
import {
  outputCountOf,
  outputTypeOf,
  pipelineCreateBody,
  pipelineResumeBody,
  referenceableFields,
  referencePlaceholder,
  stepBodySchemas,
  stepExcludedFields,
  type PipelineCreateBody,
  type StepReference,
  type StoredReference,
} from '../../../shared/pipelines.js';
import { ApiError, invalidRequest } from '../../errors.js';
import { parseOr400 } from '../../validate.js';
import { kindSpec } from '../jobs/kinds.js';
import { checkModel, createRefusal } from '../jobs/router.js';

export interface CheckedStep extends NewPipelineStep {
  /** How many outputs it makes (what a later reference's `output` may index). */
  outputCount: number;
}

interface StepToCheck {
  /** Where the step's body is in the request (`steps[i].body`, or a resume's `body`), for the messages. */
  at: string;
  stepId: string;
  kind: JobKind;
  /** Parsed with the kind's step body (parseStepBody, or the create's schema). */
  body: Record<string, unknown>;
  projectId: string;
  /** Every step id of the pipeline, in order (a reference to a later one is told apart from a missing one). */
  allIds: string[];
  earlier: CheckedStep[];
}

const article = (type: 'image' | 'video') => (type === 'image' ? 'an image' : 'a video');
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A path as the refusals write it: the step by its index, then the field (`steps[2].body.reference_file_ids.1`). */
function pathText(path: readonly PropertyKey[]): string {
  return path.map((key, i) => (i > 0 && path[i - 1] === 'steps' && typeof key === 'number' ? `[${key}]` : `${i ? '.' : ''}${String(key)}`)).join('') || 'body';
}

/**
 * The schema's issues, each at its full path. A field that takes an upload id or a reference fails
 * both; the branch its value's type was meant for words it (an object: the reference's own fields).
 * A field a step must not carry is named with why.
 */
function issuesAt(
  issues: readonly z.core.$ZodIssue[],
  prefix: readonly PropertyKey[],
  excluded: Readonly<Record<string, string>> = stepExcludedFields,
): { path: PropertyKey[]; message: string }[] {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      const fitting = issue.errors.filter((branch) => !(branch.length === 1 && branch[0]!.code === 'invalid_type' && branch[0]!.path.length === 0));
      if (fitting.length === 1) return issuesAt(fitting[0]!, path, excluded);
      // A value of none of the types (a number where an id or a reference goes): name them all.
      if (fitting.length === 0) {
        const expected = issue.errors.map((branch) => (branch[0] as { expected?: string }).expected);
        return [{ path, message: `Invalid input: expected ${expected.join(' or ')}` }];
      }
    }
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => (key in excluded ? { path: [...path, key], message: excluded[key]! } : { path, message: `Unrecognized key: "${key}"` }));
    }
    return [{ path, message: issue.message }];
  });
}

/** 400 naming the step and the field of each of the first issues. */
function refusal(error: z.ZodError, prefix: readonly PropertyKey[] = [], excluded?: Readonly<Record<string, string>>): ApiError {
  const message = issuesAt(error.issues, prefix, excluded)
    .slice(0, 5)
    .map((i) => `${pathText(i.path)}: ${i.message}`)
    .join('; ');
  return invalidRequest(message);
}

/** A model the step's kind does not serve is `invalid_model`, told apart from other malformed fields (as the kind's create endpoint does). */
function checkStepModel(kind: unknown, body: unknown, at: string): void {
  if (typeof kind !== 'string' || !(jobKinds as readonly string[]).includes(kind) || !isObject(body)) return;
  try {
    checkModel(kindSpec(kind as JobKind), body);
  } catch (err) {
    throw atStep(err, at, '');
  }
}

/**
 * A body holding `steps` (a pipeline create, a batch's pipeline item at `prefix`) parsed with
 * `schema`, its refusals naming the step and the field (a field the body must not carry, with why
 * from `excluded`).
 */
export function parseWithSteps<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  prefix: readonly PropertyKey[] = [],
  excluded?: Readonly<Record<string, string>>,
): z.output<S> {
  if (isObject(raw) && Array.isArray(raw.steps)) {
    for (const [i, step] of raw.steps.entries()) if (isObject(step)) checkStepModel(step.kind, step.body, pathText([...prefix, 'steps', i, 'body']));
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw refusal(parsed.error, prefix, excluded);
  return parsed.data;
}

/** A create's body parsed with the published schema, its refusals naming the step and the field. */
export function parsePipelineCreate(raw: unknown): PipelineCreateBody {
  return parseWithSteps(pipelineCreateBody, raw);
}

/**
 * A resume's body parsed with the published schema. Its new `body` is a step body of any kind there
 * (the failed step's kind is known only once the pipeline is read): the handler parses it with that
 * kind's (parseStepBody), which words the refusal of a body the union refuses as well.
 */
export function parseResumeBody(raw: unknown): z.infer<typeof pipelineResumeBody> {
  const parsed = pipelineResumeBody.safeParse(raw);
  const onlyTheBody = !parsed.success && isObject(raw) && isObject(raw.body) && parsed.error.issues.every((i) => i.path[0] === 'body');
  if (!parsed.success && !onlyTheBody) throw refusal(parsed.error);
  return { body: (raw as { body?: Record<string, unknown> }).body };
}

/** A step's body parsed with its kind's step body (`at`: where it is in the request). */
export function parseStepBody(kind: JobKind, body: unknown, at: readonly PropertyKey[]): Record<string, unknown> {
  checkStepModel(kind, body, pathText(at));
  const parsed = stepBodySchemas[kind].safeParse(body);
  if (!parsed.success) throw refusal(parsed.error, at);
  return parsed.data;
}

/** A kind's refusal of the step's body, its message prefixed by where the step's body is (`at`). */
function atStep(err: unknown, at: string, projectId: string): unknown {
  const e = createRefusal(err, projectId);
  if (!(e instanceof ApiError) || (e.status !== 400 && e.status !== 404)) return e;
  const own = e.message.replace(/^body: /, '');
  const message = /^[A-Za-z_][A-Za-z0-9_.]*: /.test(own) ? `${at}.${own}` : `${at}: ${own}`;
  return new ApiError(e.status, e.code, message, e.extra);
}

/** The step's references checked and replaced by their placeholders; the refs as stored. */
function takeReferences(s: StepToCheck): { body: Record<string, unknown>; refs: StoredReference[]; pending: Set<string> } {
  const body = { ...s.body };
  const refs: StoredReference[] = [];
  const pending = new Set<string>();
  for (const { field, type } of referenceableFields(s.kind)) {
    const take = (value: unknown, index: number | null): unknown => {
      if (!isObject(value)) return value;
      const path = `${s.at}.${field}${index === null ? '' : `.${index}`}`;
      // Parsed by the step body's schema: an object in an upload field is a reference.
      const ref = value as unknown as StepReference;
      const from = s.earlier.find((e) => e.stepId === ref.from);
      if (!from) {
        const why = s.allIds.includes(ref.from) ? 'does not run before this step (a reference names an earlier step)' : 'does not exist in this pipeline';
        throw invalidRequest(`${path}: step "${ref.from}" ${why}`);
      }
      if (ref.output >= from.outputCount) {
        throw invalidRequest(
          `${path}: step "${ref.from}" makes ${from.outputCount} output${from.outputCount === 1 ? '' : 's'}, so output ${ref.output} does not exist`,
        );
      }
      const made = outputTypeOf(from.kind);
      if (made !== type) throw invalidRequest(`${path}: step "${ref.from}" outputs ${made}, ${article(type)} is expected`);
      refs.push({ ...ref, field, index });
      const placeholder = referencePlaceholder(ref);
      pending.add(placeholder);
      return placeholder;
    };
    const value = body[field];
    if (Array.isArray(value)) body[field] = value.map((v, i) => take(v, i));
    else if (value !== undefined) body[field] = take(value, null);
  }
  return { body, refs, pending };
}

/** One step checked as its kind's create checks it (in `q`, the create's transaction or a dry run's). */
export async function checkStep(jobs: JobService, s: StepToCheck, q: Queryable, workspaceId: string): Promise<CheckedStep> {
  const { body, refs, pending } = takeReferences(s);
  const spec = kindSpec(s.kind);
  try {
    const full = { ...body, project_id: s.projectId };
    checkModel(spec, full);
    const parsed = parseOr400(spec.body, full) as { priority?: JobPriority; deadline_seconds?: number };
    const prepared = await spec.prepare(parsed, q, workspaceId, pending);
    const priority = parsed.priority ?? 'normal';
    if (priority === 'high' && !(await highPriorityAllowed(q, workspaceId))) {
      throw new ApiError(403, 'priority_not_allowed', `${s.at}.priority: high is not enabled for this workspace; use normal or low`);
    }
    const quote = await jobs.quote(q, { workspaceId, projectId: s.projectId, ...prepared, priority });
    const params = prepared.params as Record<string, unknown>;
    return {
      stepId: s.stepId,
      kind: s.kind,
      model: prepared.model,
      body: s.body,
      params,
      refs,
      priority,
      deadlineSeconds: parsed.deadline_seconds ?? null,
      price: quote.price,
      outputCount: outputCountOf(s.kind, params),
    };
  } catch (err) {
    throw atStep(err, s.at, s.projectId);
  }
}

/** Every step of a create, in order; throws the first refusal. */
export async function checkSteps(jobs: JobService, body: PipelineCreateBody, q: Queryable, workspaceId: string, maxSteps: number): Promise<CheckedStep[]> {
  if (body.steps.length > maxSteps) throw invalidRequest(`steps: at most ${maxSteps} steps per pipeline (PIPELINE_MAX_STEPS)`);
  const allIds = body.steps.map((s) => s.id);
  const checked: CheckedStep[] = [];
  for (const [i, step] of body.steps.entries()) {
    if (allIds.indexOf(step.id) !== i) throw invalidRequest(`steps[${i}].id: step id "${step.id}" is used by an earlier step`);
    // The step's job carries the pipeline's labels and its own: their union stays within the bounds.
    const labels = mergeLabels(body, step.body as { metadata?: Record<string, string>; tags?: string[] });
    if ('error' in labels) throw invalidRequest(`steps[${i}].body.${labels.error}`);
    checked.push(
      await checkStep(
        jobs,
        { at: `steps[${i}].body`, stepId: step.id, kind: step.kind, body: step.body, projectId: body.project_id, allIds, earlier: checked },
        q,
        workspaceId,
      ),
    );
  }
  return checked;
}
