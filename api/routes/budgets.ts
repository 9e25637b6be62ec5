// GET /v1/budgets (extension): the spend limits of the key's workspace, per API key and per project,
// with where each stands in its current period (UTC day or month). Budgets are set by the operator
// (admin CLI `budget set`); creates that would pass one answer 402 budget_exceeded (docs/api/budgets.md).
import { z } from 'zod';
import type { AppDeps } from '../deps.js';
import type { Auth } from '../auth.js';
import { authOf } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { workspaceBudgets, type BudgetStanding } from '../../db/repos/budgets.js';

const budgetSchema = z.object({
  id: z.string().describe('budget id (bud_...)'),
  scope: z.enum(['key', 'project']).describe('what the budget limits: one API key or one project'),
  scope_id: z.string().describe('the API key id (key_...) or the project id'),
  period: z.enum(['day', 'month']).describe('the period the limit applies to: a UTC day or a UTC calendar month'),
  limit: z.number().int().describe('credits the scope may spend (net of refunds) on jobs created in one period'),
  spent: z.number().int().describe('net credits charged to the jobs of the scope created in the current period (refunds deducted)'),
  remaining: z.number().int().describe('credits left in the current period (limit minus spent, at least 0)'),
  period_start: z.string().describe('when the current period started (ISO 8601, UTC)'),
  resets_at: z.string().describe('when the current period ends and the budget admits again (ISO 8601, UTC)'),
  alert_at: z.array(z.number().int()).describe('thresholds in percent of the limit at which a budget.threshold_reached webhook event is sent'),
});

export const budgetListSchema = z.array(budgetSchema);

/** A budget as the API shows it; the alert URL is the operator's and is not shown. */
export function presentBudget(s: BudgetStanding): z.infer<typeof budgetSchema> {
  const b = s.budget;
  return {
    id: b.id,
    scope: b.scope,
    scope_id: b.scope_id,
    period: b.period,
    limit: b.limit_credits,
    spent: s.spent,
    remaining: s.remaining,
    period_start: s.periodStart.toISOString(),
    resets_at: s.resetsAt.toISOString(),
    alert_at: b.alert_at,
  };
}

export const budgetEndpoints = new Endpoints<AppDeps>().add({
  method: 'get',
  path: '/v1/budgets',
  summary: "List the workspace's budgets (extension)",
  description:
    "Every spend limit of the key's workspace, per API key and per project, with its net spend in the current UTC day or month, what is left and when it resets. A create that would pass one answers 402 budget_exceeded.",
  tags: ['Budgets'],
  scope: 'read',
  rateClass: 'poll',
  response: budgetListSchema,
  errors: [401, 429, 500],
  async handler({ res, services: deps }) {
    const { workspaceId } = authOf(res);
    const now = (deps.clock ?? (() => new Date()))();
    const standings = await workspaceBudgets(deps.db, workspaceId, now);
    res.json({ data: standings.map(presentBudget) });
  },
});

export const createBudgetsRouter = (deps: AppDeps, auth: Auth) => budgetEndpoints.router(deps, auth);
