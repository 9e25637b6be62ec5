// The provider step that cancels a request, refunding what a confirmed cancel leaves uncharged.
import * as jobsRepo from '../../db/repos/jobs.js';
import { routeCancel } from '../../shared/routing.js';
import { routeFor } from '../../shared/catalog.js';
import type { ProviderRef } from '../providers/types.js';
import type { ProviderName } from '../../shared/job-model.js';
import type { JobProviderActivities } from '../../workflows/activity-types.js';
import { sameRef } from './common.js';
import type { ProviderStepKit } from './provider-kit.js';

export function cancelProviderStep(kit: ProviderStepKit): JobProviderActivities['cancelProvider'] {
  const { deps, db, jobs, providerContext, call } = kit;
  /**
   * Cancels the request given (a given-up route's, or the run's own), else the job's recorded one;
   * none, nothing to do. The given one comes first: by the time a given-up route's cancel runs, the
   * row may hold a newer request of the job (a reset run's on the same provider) that must live. A
   * cancel the provider confirms of the request the job's charge stands on (the recorded one),
   * where its cancel is honored, refunds what the customer's cancel kept (the provider charges
   * nothing for it). The provider's answer goes on the job's timeline either way.
   */
  return async function cancelProvider(provider: ProviderName, model: string, jobId: string, ref: ProviderRef | undefined): Promise<void> {
    const adapter = deps.adapterFor(provider);
    const recorded = adapter.free ? null : ((await jobsRepo.getJob(db, jobId))?.provider_ref as ProviderRef | null);
    // Only this provider's request: after a failover the row holds the next route's.
    const target = ref?.provider === provider ? ref : recorded?.provider === provider ? recorded : undefined;
    if (!target) return;
    const outcome = await call(provider, model, 'cancel', () => adapter.cancel(target, providerContext()));
    // (jsonb keeps its own key order: compared field by field.)
    const charged = recorded !== null && sameRef(recorded, target);
    const policy = provider === 'local' ? undefined : routeCancel(routeFor(model), provider);
    const honored = policy !== undefined && policy !== 'never';
    const answer = policy === 'never' ? 'not_cancellable' : outcome.confirmed ? 'confirmed' : 'not_confirmed';
    await jobs.cancelAnswered(jobId, { provider, ref: target, outcome: answer }, outcome.confirmed && charged && honored);
  };
}
