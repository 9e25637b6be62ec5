// The speech step of a route that has one (a talking actor's catalog `speech`): the script spoken by
// the speech provider on its own queue, stored as the job's speech.wav, before the route's request.
import { Context } from '@temporalio/activity';
import { failureTypes } from '../../shared/failure-types.js';
import type { ProviderRequest, SpeechAudio } from '../providers/types.js';
import type { ProviderName } from '../../shared/job-model.js';
import type { JobProviderActivities } from '../../workflows/activity-types.js';
import { currentRunId, nonRetryable, refuseAfterDeadline } from './common.js';
import type { ProviderStepKit } from './provider-kit.js';

export function speakStep(kit: ProviderStepKit): JobProviderActivities['speak'] {
  const { deps, ownJob, call, providerContext } = kit;
  /**
   * Speaks the request's script with `provider` for the run holding the job (claimed first in a
   * reset run). The speech is paid once: a retry, or a resubmit after a failover, finds it stored.
   * Nothing is spoken after the customer's deadline (`notAfter`).
   */
  return async function speak(provider: ProviderName, req: ProviderRequest, notAfter?: string): Promise<SpeechAudio> {
    const adapter = deps.adapterFor(provider);
    if (!adapter.speak) throw nonRetryable(failureTypes.providerRejected, `${provider} has no speech step`);
    refuseAfterDeadline(notAfter, 'its speech was made');
    await ownJob(req.jobId, currentRunId(), 'submitting');
    const speech = await call(provider, req.model, 'speak', () => adapter.speak!(req, providerContext()));
    Context.current().log.info('speech stored', { jobId: req.jobId, provider, seconds: Math.round(speech.seconds * 10) / 10 });
    return speech;
  };
}
