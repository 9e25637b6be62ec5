// The provider step that submits a job's request (once per job and run) and checks it once.
import { Context } from '@temporalio/activity';
import { failureTypes } from '../../shared/failure-types.js';
import type { ProviderRef, ProviderRequest } from '../providers/types.js';
import type { ProviderName } from '../../shared/job-model.js';
import type { JobProviderActivities, ProviderCheck, ProviderStepOptions, RouteSlotWait } from '../../workflows/activity-types.js';
import { stepAttempt, nonRetryable, currentRunId, runClaim, refuseAfterDeadline } from './common.js';
import type { ProviderStepKit, StepDetails } from './provider-kit.js';

export function submitAndCheckStep(kit: ProviderStepKit): JobProviderActivities['submitAndCheck'] {
  const { deps, jobs, attemptRef, mayFailOver, notAfterOf, slotWaits, slots, providerContext, refFromHeartbeat, ownJob, recordRef, call, check, bestEffort } =
    kit;
  /**
   * Submits once per job and run, then checks once (storing the outputs of a provider that
   * finished within submit: the local renderer renders there). The request an earlier attempt
   * made — in its last heartbeat, or recorded on the job row — is polled instead of submitted
   * again; a new one is recorded on the row and in the heartbeat before anything else can fail.
   * The local renderer (a free provider) is simply run again. Nothing is submitted after the
   * customer's deadline (`opts.notAfter`). A new request first takes a slot of its route
   * (ROUTE_SLOTS), or, nothing submitted, the step answers RouteSlotWait (`opts.slotGrant`: the
   * workflow waits for a grant) or fails as RouteSlotBusy and is retried soon;
   * the slot goes back once the request ended (stored or failed here, or the job's failure, cancel,
   * deadline or failover).
   */
  return async function submitAndCheck(
    provider: ProviderName,
    req: ProviderRequest,
    opts: ProviderStepOptions = {},
  ): Promise<(ProviderCheck & { ref: ProviderRef }) | RouteSlotWait> {
    const adapter = deps.adapterFor(provider);
    const runId = currentRunId();
    const ctx = Context.current();
    if (opts.failover) mayFailOver.set(ctx, opts);
    if (opts.notAfter !== undefined) notAfterOf.set(ctx, Date.parse(opts.notAfter));
    if (adapter.free) {
      refuseAfterDeadline(opts.notAfter, `its submit to ${provider}`);
      const ref = await call(provider, req.model, 'submit', () => adapter.submit(req, providerContext()));
      const first = await check(provider, req, ref, true);
      if (!first.stored) {
        // Still running (an injected latency): the row says so, with the reference, and then takes
        // the check's first figure (a figure is written only while the row is generating).
        if (!(await jobs.recordProviderRef(req.jobId, runId, ref, stepAttempt()))) {
          throw nonRetryable(failureTypes.illegalStatusMove, `job ${req.jobId} is no longer held by this run`);
        }
        const queuePosition = first.state === 'queued' ? (first.queuePosition ?? null) : null;
        await bestEffort('progress', () => deps.progress.poll(req.jobId, { percent: first.percent ?? null, queuePosition, attempt: ctx.info.attempt }));
      }
      return { ref, ...first };
    }
    let ref = refFromHeartbeat();
    const job = await ownJob(req.jobId, runId, 'submitting');
    // The row's request counts only when it is this provider's (a failover forgets the last route's).
    const recorded = job.provider_ref as ProviderRef | null;
    if (recorded?.provider === provider) ref ??= recorded;
    if (ref && ref.provider !== provider) ref = undefined;
    if (ref) {
      attemptRef.set(ctx, ref);
      slotWaits.set(ctx, await slots.renew(provider, job));
      // Found in the heartbeat only: the row learns it now.
      if (recorded?.provider !== provider) await recordRef(provider, req.model, req.jobId, runId, ref);
    } else {
      refuseAfterDeadline(opts.notAfter, `its submit to ${provider}`);
      const taken = await slots.take(provider, job, ctx.info.attempt, { grant: opts.slotGrant === true });
      // Nothing submitted: the job waits for a grant of its route's slot in its workflow.
      if (typeof taken !== 'number') return taken;
      slotWaits.set(ctx, taken);
      ref = await call(provider, req.model, 'submit', () => adapter.submit(req, providerContext()));
      attemptRef.set(ctx, ref);
      ctx.heartbeat({ ref } satisfies StepDetails);
      await recordRef(provider, req.model, req.jobId, runId, ref);
    }
    const first = await check(provider, req, ref);
    if (first.stored || first.state === 'failed') await slots.release(req.jobId);
    return { ref, ...first, claim: runClaim(job) };
  };
}
