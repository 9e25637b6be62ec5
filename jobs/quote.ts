// The quote of a create: the route that serves the request here, its price and what a cancel keeps,
// and for a dry run the project and balance checks. Part of the job service (jobs/service.ts), split
// out by concern: a create and its dry run are priced by the same code, and nothing here writes.
import type { Queryable } from '../db/index.js';
import * as jobsRepo from '../db/repos/jobs.js';
import { creditsOf } from '../db/repos/job-ledger.js';
import { priceAt, providerCostFor, requestRefusal } from '../shared/catalog.js';
import { resolveJobRoute } from '../shared/routing.js';
import type { StoredJobParams } from '../shared/job-params.js';
import type { JobServiceDeps, Quote, QuoteRequest } from './service-types.js';
import { JobRequestRefusedError } from './rules.js';
import { kindOf } from '../kinds/index.js';

/** Throws ProjectNotInWorkspaceError unless the project is the workspace's: the 403 rule. */
export async function requireProject(q: Queryable, workspaceId: string, projectId: string): Promise<void> {
  if ((await jobsRepo.projectWorkspace(q, projectId)) !== workspaceId) throw new jobsRepo.ProjectNotInWorkspaceError(projectId);
}

/** The route that serves the request here, its price and what a cancel keeps. Throws JobRequestRefusedError. */
function price(config: JobServiceDeps['config'], req: QuoteRequest): Quote {
  if (!config) throw new Error('this job service has no routing configuration');
  const route = resolveJobRoute(config, req.route, req.params);
  if (!route) throw new JobRequestRefusedError('invalid_model', `model ${req.model} is not enabled here (its provider is not configured in this deployment)`);
  const refusal = requestRefusal(req.route, req.params, route.provider, kindOf(req.route.kind).requestRules);
  if (refusal) throw new JobRequestRefusedError('invalid_request', refusal);
  const params = { ...req.params, ...route } as StoredJobParams;
  // The local renderer costs the operator nothing: a cancel refunds all of it.
  return {
    params,
    price: priceAt(req.route, req.params, req.priority),
    nonRefundable: params.provider === 'local' ? 0 : providerCostFor(req.route, req.params),
  };
}

/** The service's quote, bound to its routing configuration so the gateway's callers never pass it. */
export function createQuote(deps: Pick<JobServiceDeps, 'config'>) {
  /**
   * THE quote of a create, and of its dry run (`balance`: the project checked first, and the price
   * against the workspace's balance; nothing is written). Throws JobRequestRefusedError, and
   * ProjectNotInWorkspaceError for a dry run.
   */
  async function quote(q: Queryable, req: QuoteRequest): Promise<Quote>;
  async function quote(q: Queryable, req: QuoteRequest, opts: { balance: true }): Promise<Quote & { available: number; sufficient: boolean }>;
  async function quote(q: Queryable, req: QuoteRequest, opts: { balance?: boolean } = {}): Promise<Quote & { available?: number; sufficient?: boolean }> {
    if (!opts.balance) return price(deps.config, req);
    await requireProject(q, req.workspaceId, req.projectId);
    const quoted = price(deps.config, req);
    const available = (await creditsOf(q, req.workspaceId)) ?? 0;
    return { ...quoted, available, sufficient: available >= quoted.price };
  }
  return quote;
}
