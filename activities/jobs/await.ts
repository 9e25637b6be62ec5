// The provider step that waits for a job's recorded request in the worker: it polls the provider at
// the pace the workflow's timers kept (the adapter's nextPollMs, else the growing backoff), each poll
// as checkProvider makes it (./check.ts) but storing nothing, and returns to the workflow only when
// there is something for it: the request done (a checkProvider on the provider's queue then stores
// the outputs, under the fleet's PROVIDER_CONCURRENCY), failed or gone (resubmit), progress the
// workflow's query shows (state, percent, queue position) changed, the model's deadline reached, or
// its window over. It runs on the provider's waits queue (workflows/definitions.ts), whose slots are
// many. A poll that changes nothing costs no Temporal action: no timer, no activity, no workflow task.
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import type { ProviderRef } from '../providers/types.js';
import type { ProviderName } from '../../shared/job-model.js';
import { nonRetryableFailureTypes } from '../../shared/failure-types.js';
import type { JobProviderActivities, ProviderCheck, ProviderStepOptions, ProviderWait } from '../../workflows/activity-types.js';
import type { ProviderStepKit, StepDetails } from './provider-kit.js';
import { checkProviderStep } from './check.js';
import { parsePerProvider } from '../../shared/per-provider.js';

/**
 * A waiting step heartbeats once this long has passed since its last beat (the SDK forwards at most
 * one per 24 s, 80% of the 30 s heartbeat timeout): a wait under it sends none, and a lost worker is
 * still found within one heartbeat timeout.
 */
const WAIT_BEAT_EVERY_MS = 20_000;
/** The longest a waiting step sleeps without looking at its heartbeat (and so at a cancel). */
const SLEEP_SLICE_MS = 5_000;

/** What the workflow's progress shows of a check: a change of it is worth a workflow task. */
const shown = (c: Pick<ProviderCheck, 'state' | 'percent' | 'queuePosition'>, percentBefore: number | null) => ({
  state: c.state,
  percent: c.percent ?? percentBefore,
  queuePosition: c.state === 'queued' ? (c.queuePosition ?? null) : null,
});

/** A failure the next step meets again on its first poll and retries there (a 5xx, a throttled status endpoint, a storage blip). */
function retryable(err: unknown): boolean {
  if (err instanceof CancelledFailure) return false;
  if (err instanceof ApplicationFailure) return !err.nonRetryable && !nonRetryableFailureTypes.includes(err.type as never);
  return true;
}

/**
 * Per provider, how long a poll asked for now waits for its turn: polls take the free moments of
 * their provider's schedule one after another, `1000 / rate` ms apart; a provider without a rate
 * is never held.
 */
export function pollPacer(ratePerSecond: Partial<Record<ProviderName, number>>, now: () => number = Date.now): (provider: ProviderName) => number {
  const nextAt = new Map<ProviderName, number>();
  return (provider) => {
    const rate = ratePerSecond[provider];
    if (!rate) return 0;
    const t = now();
    const at = Math.max(t, nextAt.get(provider) ?? 0);
    nextAt.set(provider, at + 1000 / rate);
    return at - t;
  };
}

export function awaitProviderStep(kit: ProviderStepKit): JobProviderActivities['awaitProvider'] {
  const checkOnce = checkProviderStep(kit, false);
  const { attemptRef } = kit;
  // PROVIDER_RATE_PER_SECOND also paces the polls of every wait in this process, per provider: the
  // server's rate limit on the provider's queue counts that queue's activities, and a wait's polls
  // are not among them.
  const pollDelayMs = pollPacer(parsePerProvider(kit.deps.config.PROVIDER_RATE_PER_SECOND, 'PROVIDER_RATE_PER_SECOND'));
  /**
   * Polls the job's recorded request until there is news for the workflow (see the file's head),
   * never storing outputs.
   * The first poll of an attempt fails as checkProvider's would (retried by Temporal, failing over
   * like it); a later poll's failure ends the step with the last check, so the next step meets it
   * with the state the provider last reported. The route slot is renewed at every poll of a running
   * request and given back once it ended, as checkProvider does.
   */
  return async function awaitProvider(
    provider: ProviderName,
    jobId: string,
    model: string,
    ref: ProviderRef,
    wait: ProviderWait,
    opts: ProviderStepOptions = {},
  ): Promise<ProviderCheck & { waitMs: number }> {
    const ctx = Context.current();
    const began = Date.now();
    let lastBeat = began;
    let waitMs = wait.waitMs;
    let nextPollMs = wait.nextPollMs;
    let seen = wait.seen;
    let last: ProviderCheck | undefined;
    const sleep = async (ms: number) => {
      for (let left = ms; left > 0;) {
        const slice = Math.min(left, SLEEP_SLICE_MS);
        await ctx.sleep(slice);
        left -= slice;
        if (Date.now() - lastBeat >= WAIT_BEAT_EVERY_MS) {
          lastBeat = Date.now();
          ctx.heartbeat({ ref: attemptRef.get(ctx) ?? ref, detail: 'waiting for the provider' } satisfies StepDetails);
        }
      }
    };
    for (;;) {
      const remaining = wait.untilMs - Date.now();
      await sleep(Math.max(0, Math.min(nextPollMs ?? waitMs, remaining)));
      waitMs = Math.min(Math.round(waitMs * 1.5), wait.maxWaitMs);
      await sleep(pollDelayMs(provider));
      let check: ProviderCheck;
      try {
        // What the provider last reported decides whether an outage may give the route up.
        check = await checkOnce(provider, jobId, model, ref, opts.failover ? { ...opts, reported: last?.state ?? opts.reported } : opts);
      } catch (err) {
        if (last && retryable(err)) return { ...last, waitMs };
        throw err;
      }
      last = check;
      const now = shown(check, seen.percent);
      const changed = now.state !== seen.state || now.percent !== seen.percent || now.queuePosition !== seen.queuePosition;
      const news = check.resubmit || check.state === 'succeeded' || check.state === 'failed' || changed;
      if (news || Date.now() >= wait.untilMs || Date.now() - began >= wait.windowMs) return { ...check, waitMs };
      seen = now;
      nextPollMs = check.nextPollMs;
    }
  };
}
