// DELETE /v1/{kind}/{id} (extension): removes a finished job's outputs from storage. The record
// stays (without outputs, with `outputs_removed_at`); its URL endpoint then answers 410 `gone`.
// Deleting again answers the same record (idempotent); a job in flight answers 409 (cancel it
// first); another workspace's job is 404. The row is marked before the objects go, so no URL is
// handed out for media being deleted; a storage failure leaves the row marked and the DELETE can
// be repeated to finish. The first DELETE records `job.outputs_deleted` in the audit log.
import type { AppDeps } from '../deps.js';
import { authOf, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { ApiError } from '../errors.js';
import { kinds as jobKinds, presentJob } from './jobs/kinds.js';
import { loadJobOfKey } from './jobs/router.js';
import { jobPrefix } from '../../shared/storage.js';
import { removeOutputsAudited } from '../../db/repos/job-outputs.js';
import { keyActor } from '../../shared/audit.js';
import { terminalStatuses } from '../../jobs/index.js';

/** DELETE {base}/{id} of every kind, each declared once. */
export const retentionEndpoints = new Endpoints<AppDeps>();
for (const k of jobKinds) {
  retentionEndpoints.add({
    method: 'delete',
    path: `${k.base}/:id`,
    summary: `Delete the outputs of a finished ${k.kind.replace('_', '-')} job (extension)`,
    description:
      'Its media is removed from storage, the record stays (with outputs_removed_at) and the URL endpoint answers 410 gone. ' +
      'Idempotent. 409 not_ready while the job is pending or generating.',
    tags: [k.tag],
    scope: 'generate',
    rateClass: 'generate',
    response: k.record,
    errors: [401, 404, 409, 429, 500],
    async handler({ req, res, services: deps }) {
      const job = await loadJobOfKey(deps.db, req, res, k.kind);
      // The first DELETE writes the audit event (job.outputs_deleted) with the mark, in one transaction.
      const marked = await removeOutputsAudited(deps.db, job, terminalStatuses, keyActor(authOf(res).apiKeyId));
      if (!marked) {
        throw new ApiError(409, 'not_ready', `job ${job.id} is still ${job.status}; cancel it first or wait until it finished`, { status: job.status });
      }
      await deps.storage.removePrefix(jobPrefix(job.id));
      res.json({ data: presentJob(marked) });
    },
  });
}

export const createRetentionRouter = (deps: AppDeps, auth: Auth) => retentionEndpoints.router(deps, auth);
