// GET /v1/{kind}/{id}/timeline and GET /v1/jobs/{id}/timeline (extension): a job's receipt — what
// happened to it, in order, with the credits that moved — read from the job's timeline
// (db/repos/job-timeline.ts), which its moves and ledger rows write in their own transactions;
// never from Temporal. The key's workspace's jobs only (404 otherwise, like GET).
import { z } from 'zod';
import type { AppDeps } from '../deps.js';
import { authOf, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { ApiError } from '../errors.js';
import { kinds as jobKinds } from './jobs/kinds.js';
import { jobKinds as kindNames, type JobKind } from '../../kinds/index.js';
import { statusFields } from '../../kinds/define.js';
import { getJobInWorkspace } from '../../db/repos/jobs.js';
import { jobTimeline, TIMELINE_MAX_ENTRIES } from '../../db/repos/job-timeline.js';
import { cancelUpstreamOutcomes, timelineEntryTypes } from '../../shared/timeline.js';

const entry = z.object({
  at: z.number().int().describe('when it happened (ms since the Unix epoch)'),
  type: z.enum(timelineEntryTypes).describe('what happened (docs/api/receipts.md lists each type with its details)'),
  details: z
    .object({
      amount: z.number().int().optional().describe('credits moved (charged, refunded, recharged)'),
      cause: z
        .string()
        .optional()
        .describe('why credits moved: the error code of a failure (canceled, deadline_exceeded, …), cancel_confirmed, revived, completed, reconciled'),
      kept: z.number().int().optional().describe("credits a cancel did not refund (refunded on a cancel; cancel_upstream: kept before the provider's answer)"),
      price: z.number().int().optional().describe('created: the quoted price'),
      model: z.string().optional().describe('created: the model'),
      provider: z.string().optional().describe('the route: the provider submitted to, given up, serving or asked to cancel'),
      provider_model_id: z.string().nullable().optional(),
      error: z.string().optional().describe('why a route was given up (its error class)'),
      from: z.string().optional().describe('failover: the route given up'),
      to: z.string().optional().describe('failover: the route taken'),
      reason: z.string().optional().describe('failover: why'),
      outcome: z.enum(cancelUpstreamOutcomes).optional().describe("cancel_upstream: the provider's answer"),
      code: z.string().optional().describe('failed: the error code'),
      count: z.number().int().optional().describe('outputs_stored: how many'),
      message: z.string().optional().describe('failed: the error message'),
      cancel_kept: z.number().int().nullable().optional().describe("failed: what the customer's cancel kept (null: not canceled by its customer)"),
      attempt: z.number().int().optional().describe('submitted: the attempt of the submit step'),
      revived: z.boolean().optional().describe('started: whether the run took the job back from failed (an operator reset)'),
      priority: z.string().optional().describe('created: the priority'),
    })
    .describe("the entry's facts; amounts in credits"),
});

const timeline = z.object({
  id: z.string(),
  kind: z.enum(kindNames),
  status: statusFields.status,
  charges: statusFields.charges,
  entries: z.array(entry).describe(`in the order they happened; at most ${TIMELINE_MAX_ENTRIES}`),
  truncated: z.boolean().describe(`true when the job has more than ${TIMELINE_MAX_ENTRIES} entries (only the first are answered)`),
});

const description =
  'What happened to the job, in order: created and quoted, charged, each provider attempt (started, submitted, given up with its error class), ' +
  'failover (from → to, why), cancel requested, the provider’s answer to the cancel (confirmed, not confirmed, not cancellable, with what was kept), ' +
  'refunds and charges again (with amounts), outputs stored, failed or completed, outputs deleted. Read from the job’s own records, so it survives worker ' +
  `restarts and operator resets. At most ${TIMELINE_MAX_ENTRIES} entries. 404 for another workspace's job.`;

/** The timelines, one per kind's status path and one for any job. */
export const timelineEndpoints = new Endpoints<AppDeps>();
for (const spec of [
  ...jobKinds.map((k) => ({ base: k.base, kind: k.kind as JobKind | undefined, tag: k.tag })),
  { base: '/v1/jobs', kind: undefined, tag: 'Jobs' },
]) {
  timelineEndpoints.add({
    method: 'get',
    path: `${spec.base}/:id/timeline`,
    summary: spec.kind
      ? `The timeline of one ${spec.kind.replace('_', '-')} job, its receipt (extension)`
      : 'The timeline of a job of any kind, its receipt (extension)',
    description,
    tags: [spec.tag],
    scope: 'read',
    rateClass: 'poll',
    response: timeline,
    errors: [401, 404, 429, 500],
    async handler({ req, res, services: deps }) {
      const { workspaceId } = authOf(res);
      const id = String(req.params.id);
      const job = await getJobInWorkspace(deps.db, workspaceId, id, spec.kind);
      if (!job) throw new ApiError(404, 'not_found', `${spec.kind ? spec.kind.replace('_', '-') + ' ' : ''}job ${id} not found`);
      const rows = await jobTimeline(deps.db, job.id, TIMELINE_MAX_ENTRIES + 1);
      res.json({
        data: {
          id: job.id,
          kind: job.kind,
          status: job.status,
          charges: { charged: job.credits_charged, refunded: job.credits_refunded, net: job.credits_charged - job.credits_refunded },
          entries: rows.slice(0, TIMELINE_MAX_ENTRIES).map((e) => ({ at: e.at.getTime(), type: e.type, details: e.details })),
          truncated: rows.length > TIMELINE_MAX_ENTRIES,
        },
      });
    },
  });
}

export const createTimelineRouter = (deps: AppDeps, auth: Auth) => timelineEndpoints.router(deps, auth);
