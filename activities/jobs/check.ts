// The provider step that checks a job's recorded request, storing its outputs when it is done.
import { Context } from '@temporalio/activity';
import type { ProviderRef } from '../providers/types.js';
import type { ProviderName } from '../../shared/job-model.js';
import type { JobProviderActivities, ProviderCheck, ProviderStepOptions } from '../../workflows/activity-types.js';
import { currentRunId, runClaim } from './common.js';
import type { ProviderStepKit } from './provider-kit.js';

/** `storeOutputs` false: a request found done is answered `succeeded` with nothing stored (awaitProvider's polls). */
export function checkProviderStep(kit: ProviderStepKit, storeOutputs = true): JobProviderActivities['checkProvider'] {
  const { deps, attemptRef, mayFailOver, slots, ownJob, check } = kit;
  /**
   * One status check of the job's recorded request; the outputs are stored when the provider is
   * done. A job with no live request (revived by a reset after its request was canceled) answers
   * `resubmit`. The job's route slot is renewed while the request runs and given back once it ended.
   */
  return async function checkProvider(
    provider: ProviderName,
    jobId: string,
    model: string,
    ref: ProviderRef,
    opts: ProviderStepOptions = {},
  ): Promise<ProviderCheck> {
    if (opts.failover) mayFailOver.set(Context.current(), opts);
    if (deps.adapterFor(provider).free) return check(provider, { jobId, model }, ref, false, storeOutputs);
    const job = await ownJob(jobId, currentRunId(), 'generating');
    const claim = runClaim(job);
    const recorded = job.provider_ref as ProviderRef | null;
    if (!recorded || recorded.provider !== provider) {
      await slots.release(jobId);
      return { state: 'queued', stored: null, resubmit: true, claim };
    }
    attemptRef.set(Context.current(), recorded);
    const result = await check(provider, { jobId, model }, recorded, false, storeOutputs);
    if (result.stored || result.state === 'failed') await slots.release(jobId);
    else await slots.renew(provider, job);
    return { ...result, claim };
  };
}
