// A create to which a budget applies (its key's or its project's). The one-statement create
// (db/repos/jobs.ts insertJobWithCharge) refuses to decide it alone; this makes it in one
// transaction: the period counters of every applying budget are made and locked in a fixed order,
// the price is checked against each limit, the job is inserted with its charge, and the price is
// added to the counters, with any threshold alert it reaches. Concurrent creates under one budget
// queue on its counter's row lock, so they admit exactly as many as the limit allows.
import type { Database, Queryable, Tx } from '../db/index.js';
import type { Job } from '../db/schema.js';
import * as jobsRepo from '../db/repos/jobs.js';
import type { NewJobInput } from '../db/repos/jobs.js';
import { BudgetExceededError, budgetsFor, countCharge, lockCounters, refusingBudget, standingOf, type BudgetStanding } from '../db/repos/budgets.js';
import { periodEnd } from '../shared/budgets.js';

export { BudgetExceededError } from '../db/repos/budgets.js';

/** A threshold a create's charge reached (for the caller's metrics and logs). */
export interface BudgetAlert {
  budgetId: string;
  threshold: number;
}

/** The create under its budgets, in `q` when it is a transaction already (an Idempotency-Key's), else in one of its own. */
export async function createWithinBudgets(db: Database, q: Queryable, input: NewJobInput, now: Date): Promise<{ job: Job; alerts: BudgetAlert[] }> {
  const run = async (tx: Tx) => {
    const budgets = await budgetsFor(tx, input.workspaceId, input.apiKeyId, input.projectId);
    const counters = await lockCounters(tx, budgets, now);
    const refusing = refusingBudget(
      counters.map((c) => ({ budget: c.budget, spent: c.spent })),
      input.price,
    );
    if (refusing) {
      const c = counters.find((x) => x.budget.id === refusing.budget.id)!;
      throw new BudgetExceededError(c.budget, input.price, Math.max(0, c.budget.limit_credits - c.spent), periodEnd(c.budget.period, c.start));
    }
    const job = await jobsRepo.insertJobWithCharge(tx, { ...input, budgetsChecked: true });
    const alerts = await countCharge(tx, job.id, counters, input.price);
    return { job, alerts };
  };
  return q.isTransaction ? run(q as Tx) : db.transaction().execute(run);
}

/**
 * A dry run's view of the budgets of a create: read only (the counters are not made), so it may
 * say yes to a create that a racing one then fills. Null when no budget applies.
 */
export async function budgetCheck(
  q: Queryable,
  input: Pick<NewJobInput, 'workspaceId' | 'apiKeyId' | 'projectId' | 'price'>,
  now: Date,
): Promise<{ withinBudget: boolean; remaining: number; refusing: BudgetStanding | undefined } | null> {
  const budgets = await budgetsFor(q, input.workspaceId, input.apiKeyId, input.projectId);
  if (budgets.length === 0) return null;
  const standings: BudgetStanding[] = [];
  for (const b of budgets) standings.push(await standingOf(q, b, now));
  const refusing = refusingBudget(standings, input.price);
  return { withinBudget: refusing === undefined, remaining: Math.min(...standings.map((s) => s.remaining)), refusing };
}
