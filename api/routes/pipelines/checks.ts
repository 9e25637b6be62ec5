// A pipeline's create (and a resume's new body) validated whole before anything is written: each
// step's body as its kind's create endpoint validates it (model, settings, per-model rules, the
// uploads it names, its route and price, through the same kind spec and job service quote), and
// each reference to an earlier step's output (the step exists and runs earlier, the output index is
// within what it makes, the media type is the field's). A refusal names the step and the field:
// `steps[2].body.start_frame_file_id: step "clip" outputs video, an image is expected`.
import type { Queryable } from '../../../db/index.js';
import type { NewPipelineStep } from '../../../db/repos/pipelines.js';
import type { JobService } from '../../../jobs/index.js';
import { highPriorityAllowed } from '../../../db/repos/workspace-priority.js';
import type { JobPriority } from '../../../shared/job-model.js';
import type { JobKind } from '../../../shared/kinds/index.js';
import {
  outputCountOf,
  outputTypeOf,
  referenceableFields,
  referencePlaceholder,
  stepReferenceSchema,
  type PipelineCreateBody,
  type StoredReference,
} from '../../../shared/pipelines.js';
import { ApiError, invalidRequest } from '../../errors.js';
import { formatIssues, parseOr400 } from '../../validate.js';
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
  body: Record<string, unknown>;
  projectId: string;
  /** Every step id of the pipeline, in order (a reference to a later one is told apart from a missing one). */
  allIds: string[];
  earlier: CheckedStep[];
}

const article = (type: 'image' | 'video') => (type === 'image' ? 'an image' : 'a video');
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

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
      const parsed = stepReferenceSchema.safeParse(value);
      if (!parsed.success) throw invalidRequest(`${path}: ${formatIssues(parsed.error).replaceAll('body: ', '')}`);
      const ref = parsed.data;
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
  for (const field of ['project_id', 'webhook_url', 'webhook_events']) {
    if (field in s.body) {
      const why = field === 'project_id' ? "a step's project is the pipeline's" : 'a step has no webhook of its own (the pipeline has webhook_url)';
      throw invalidRequest(`${s.at}.${field}: ${why}`);
    }
  }
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
