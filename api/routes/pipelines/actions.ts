// A pipeline's cancel, resume and receipt. Each move takes the pipeline row's lock, as the parent
// workflow's activities do (activities/pipelines.ts), so a cancel either finds the step's job and
// cancels it through the job service (its refund rules, its provider cancel), or is found by the
// step's start before its job exists; no later step starts either way.
import { z } from 'zod';
import type { Endpoints } from '../../endpoint.js';
import { authOf, keyCreateCheck } from '../../auth.js';
import { ApiError } from '../../errors.js';
import type { Job } from '../../../db/schema.js';
import * as repo from '../../../db/repos/pipelines.js';
import { isTerminal, requestPipelineCancel } from '../../../jobs/index.js';
import { outputCountOf, pipelineRecordSchema, pipelineResumeBody } from '../../../shared/pipelines.js';
import { awaitPipelineRunClosed, startPipelineWorkflow } from '../../../workflows/pipeline-client.js';
import { workspaceShareWeight } from '../../../db/repos/fair-share.js';
import { checkStep, parseResumeBody, parseStepBody, type CheckedStep } from './checks.js';
import { loadPipelineOfKey, refuseOverActive, TAG, type PipelineServices } from './common.js';
import { presentPipeline } from './present.js';

const receiptSchema = z.object({
  id: z.string(),
  status: pipelineRecordSchema.shape.status,
  price: z.number().int().describe("the sum of the steps' quoted prices"),
  charged: z.number().int().describe('credits charged, every step and attempt'),
  refunded: z.number().int().describe('credits refunded'),
  net: z.number().int().describe('charged less refunded'),
  steps: z.array(
    z.object({
      id: z.string(),
      kind: pipelineRecordSchema.shape.steps.element.shape.kind,
      status: pipelineRecordSchema.shape.steps.element.shape.status,
      price: z.number().int(),
      jobs: z
        .array(z.object({ job_id: z.string(), status: z.string(), charged: z.number().int(), refunded: z.number().int() }))
        .describe("each attempt's job, oldest first (GET /v1/jobs/{id}/timeline tells what happened to it)"),
    }),
  ),
});

export function addPipelineActions(endpoints: Endpoints<PipelineServices>): void {
  endpoints.add({
    method: 'post',
    path: '/v1/pipelines/:id/cancel',
    summary: 'Cancel a pipeline (extension)',
    description:
      "The current step's job is canceled as a job cancel is (refunded by its rules: in full before its submit, else all but the provider's cost unless the provider confirms) and no later step starts. " +
      'The pipeline ends failed with error code canceled; a canceled pipeline cannot be resumed. A pipeline already completed or failed answers 409 not_cancelable.',
    tags: [TAG],
    scope: 'generate',
    rateClass: 'generate',
    response: pipelineRecordSchema,
    errors: [401, 404, 409, 429, 500],
    async handler({ req, res, services: { deps, jobs } }) {
      const p = await loadPipelineOfKey(deps.db, req, res);
      const job = await deps.db.transaction().execute(async (tx): Promise<Job | null> => {
        const r = await requestPipelineCancel(tx, p.id);
        if ('ended' in r) throw new ApiError(409, 'not_cancelable', `pipeline ${p.id} is already ${r.ended} and cannot be canceled`);
        return r.job;
      });
      // The step's job ends canceled and refunded by the job service; the parent checkpoints it and stops.
      if (job) await jobs.cancel(job);
      res.json({ data: await presentPipeline(deps.db, deps.storage, (await repo.getPipeline(deps.db, p.id))!) });
    },
  });

  endpoints.add({
    method: 'post',
    path: '/v1/pipelines/:id/resume',
    summary: 'Resume a failed pipeline (extension)',
    description:
      'Runs the failed step again as a new job (charged its price when it starts), optionally with a new body (validated as at create, references too), then the steps after it. ' +
      'Earlier steps keep their stored outputs and are never run or paid again. Only a failed pipeline that was not canceled may be resumed (else 409 not_resumable).',
    tags: [TAG],
    scope: 'generate',
    rateClass: 'generate',
    body: pipelineResumeBody,
    parseBody: parseResumeBody,
    response: pipelineRecordSchema,
    errors: [400, 401, 403, 404, 409, 429, 500],
    async handler({ req, res, body, services: { deps, jobs } }) {
      const p = await loadPipelineOfKey(deps.db, req, res);
      const { workspaceId } = authOf(res);
      const steps = await deps.db.transaction().execute(async (tx) => {
        const locked = await repo.lockPipeline(tx, p.id);
        if (locked.status !== 'failed' || locked.cancel_requested_at !== null) {
          const why = locked.status === 'failed' ? 'was canceled' : `is ${locked.status}`;
          throw new ApiError(409, 'not_resumable', `pipeline ${p.id} ${why}; only a failed pipeline that was not canceled can be resumed`);
        }
        await refuseOverActive(tx, deps, res, workspaceId);
        const all = await repo.stepsOf(tx, p.id);
        const failed = all.find((s) => s.status !== 'completed')!;
        let changed: CheckedStep | undefined;
        if (body.body !== undefined) {
          const earlier = all
            .filter((s) => s.position < failed.position)
            .map((s) => ({ stepId: s.step_id, kind: s.kind, outputCount: outputCountOf(s.kind, s.params) }) as CheckedStep);
          const allIds = all.map((s) => s.step_id);
          // A new body is a create of the step's kind: the key's allowed_kinds / allowed_models apply.
          keyCreateCheck(res, failed.kind, (body.body as { model?: unknown } | undefined)?.model);
          changed = await checkStep(
            jobs,
            {
              at: 'body',
              stepId: failed.step_id,
              kind: failed.kind,
              body: parseStepBody(failed.kind, body.body, ['body']),
              projectId: p.project_id,
              allIds,
              earlier,
            },
            tx,
            workspaceId,
          );
        }
        const resumed = changed && {
          body: changed.body,
          params: changed.params,
          refs: changed.refs,
          model: changed.model,
          price: changed.price,
          priority: changed.priority,
          deadlineSeconds: changed.deadlineSeconds,
        };
        return repo.reopenFailedStep(tx, p.id, resumed);
      });
      // The failed run closes right after its failure's checkpoint: a resume that comes sooner waits for it.
      await awaitPipelineRunClosed(deps.temporal, p.id, 10_000);
      const fairnessWeight = await workspaceShareWeight(deps.db, workspaceId);
      await startPipelineWorkflow(deps.temporal, { id: p.id, workspaceId, projectId: p.project_id, steps, fairnessWeight }, deps.config).catch((err: unknown) =>
        deps.logger.warn({ pipelineId: p.id, err: (err as Error).message }, 'resumed pipeline workflow start failed; left for the reconciler'),
      );
      res.json({ data: await presentPipeline(deps.db, deps.storage, (await repo.getPipeline(deps.db, p.id))!) });
    },
  });

  endpoints.add({
    method: 'get',
    path: '/v1/pipelines/:id/receipt',
    summary: "A pipeline's receipt (extension)",
    description: "Each step's charges and refunds, by job (every attempt's), read from the jobs' own receipts.",
    tags: [TAG],
    scope: 'read',
    rateClass: 'poll',
    response: receiptSchema,
    errors: [401, 404, 429, 500],
    async handler({ req, res, services: { deps } }) {
      const p = await loadPipelineOfKey(deps.db, req, res);
      const all = await repo.stepsOf(deps.db, p.id);
      const byId = await repo.jobsByIds(
        deps.db,
        all.flatMap((s) => s.jobs),
      );
      const steps = all.map((s) => ({
        id: s.step_id,
        kind: s.kind,
        status: s.job_id && byId.get(s.job_id) && !isTerminal(byId.get(s.job_id)!.status) ? byId.get(s.job_id)!.status : s.status,
        price: s.price,
        jobs: s.jobs.flatMap((id) => {
          const j = byId.get(id);
          return j ? [{ job_id: id, status: j.status, charged: j.credits_charged, refunded: j.credits_refunded }] : [];
        }),
      }));
      const charged = steps.reduce((n, s) => n + s.jobs.reduce((m, j) => m + j.charged, 0), 0);
      const refunded = steps.reduce((n, s) => n + s.jobs.reduce((m, j) => m + j.refunded, 0), 0);
      res.json({ data: { id: p.id, status: p.status, price: p.price, charged, refunded, net: charged - refunded, steps } });
    },
  });
}
