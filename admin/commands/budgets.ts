// Budgets per API key and per project (docs/api/budgets.md): `budget set`, `budget remove` and
// `budget list`. Each set and remove writes one audit event in its own transaction.
import { removeBudget, setBudget, type BudgetTarget } from '../../db/repos/budget-admin.js';
import { workspaceBudgets, type BudgetStanding } from '../../db/repos/budgets.js';
import { getWorkspace } from '../../db/repos/workspaces.js';
import { budgetPeriods, defaultAlertAt, parseAlertAt, type BudgetPeriod } from '../../shared/budgets.js';
import { checkWebhookUrl } from '../../shared/webhooks/target.js';
import { iso, nonEmpty, positiveInt, UsageError, ws, type Command } from '../command.js';
import { OPERATOR_ACTOR, operatorFor } from '../../shared/audit.js';

const target = {
  workspace: ws,
  key: { type: 'string', help: 'the API key id (key_...) the budget limits' },
  project: { type: 'string', help: 'the project id the budget limits' },
  period: { type: 'string', required: true, help: 'day or month (UTC)' },
  as: { type: 'string', help: 'who acts, for the audit log (an owner email; default system:admin-cli)' },
} as const;

function targetOf(f: Record<string, string | boolean | undefined>): BudgetTarget {
  const key = f.key as string | undefined;
  const project = f.project as string | undefined;
  if ((key === undefined) === (project === undefined)) throw new UsageError('give exactly one of --key and --project');
  const period = f.period as string;
  if (!budgetPeriods.includes(period as BudgetPeriod)) throw new UsageError(`--period must be day or month, got "${period}"`);
  return {
    workspaceId: f.workspace as string,
    scope: key !== undefined ? 'key' : 'project',
    scopeId: nonEmpty(key !== undefined ? 'key' : 'project', key ?? project!),
    period: period as BudgetPeriod,
  };
}

const actorOf = (f: Record<string, string | boolean | undefined>) =>
  typeof f.as === 'string' ? operatorFor(nonEmpty('as', f.as).toLowerCase()) : OPERATOR_ACTOR;

/** A budget's standing as the CLI prints it (JSON). */
export function budgetRow(s: BudgetStanding) {
  const b = s.budget;
  return {
    id: b.id,
    scope: b.scope,
    scope_id: b.scope_id,
    period: b.period,
    limit: b.limit_credits,
    spent: s.spent,
    remaining: s.remaining,
    resets_at: iso(s.resetsAt),
    alert_at: b.alert_at,
    alert_url: b.alert_url,
  };
}

const budgetLine = (r: ReturnType<typeof budgetRow>) =>
  `${r.id}  ${r.scope} ${r.scope_id}  ${r.period}  spent ${r.spent} of ${r.limit}, ${r.remaining} left, resets ${r.resets_at}`;

export const budgetCommands: Record<string, Command> = {
  'budget set': {
    usage: 'budget set --workspace W (--key K | --project P) --period day|month --limit N [--alert-at 80,100] [--alert-url URL] [--as EMAIL]',
    summary: 'set the spend limit of an API key or a project per UTC day or month (creates past it answer 402 budget_exceeded)',
    flags: {
      ...target,
      limit: { type: 'string', required: true, help: 'credits the scope may spend, net of refunds, on jobs created in one period' },
      'alert-at': { type: 'string', help: 'thresholds in percent of the limit that send a budget.threshold_reached webhook event (default 80,100)' },
      'alert-url': { type: 'string', help: 'where the threshold events go (https; signed with the workspace webhook secret)' },
    },
    async run(ctx, f) {
      const t = targetOf(f);
      const limit = positiveInt('limit', f.limit as string);
      let alertAt = [...defaultAlertAt];
      if (typeof f['alert-at'] === 'string') {
        try {
          alertAt = parseAlertAt(f['alert-at']);
        } catch (err) {
          throw new UsageError(`--alert-at: ${(err as Error).message}`);
        }
      }
      let alertUrl: string | null = null;
      if (typeof f['alert-url'] === 'string') {
        const loopback = ['true', '1'].includes(String(ctx.env.WEBHOOK_ALLOW_LOOPBACK ?? '').toLowerCase());
        try {
          alertUrl = checkWebhookUrl(f['alert-url'], loopback).toString();
        } catch (err) {
          throw new UsageError(`--alert-url: ${(err as Error).message}`);
        }
      }
      const { budget, previous } = await setBudget(ctx.db(), t, { limit, alertAt, alertUrl }, actorOf(f));
      return {
        json: {
          id: budget.id,
          scope: budget.scope,
          scope_id: budget.scope_id,
          period: budget.period,
          limit: budget.limit_credits,
          alert_at: budget.alert_at,
          alert_url: budget.alert_url,
          replaced: previous !== undefined,
        },
        text: [
          `${previous ? 'changed' : 'set'} the ${t.period} budget of ${t.scope} ${t.scopeId}: ${limit} credits${previous ? ` (was ${previous.limit_credits})` : ''} (${budget.id})`,
        ],
      };
    },
  },
  'budget remove': {
    usage: 'budget remove --workspace W (--key K | --project P) --period day|month [--as EMAIL]',
    summary: 'remove the spend limit of an API key or a project for that period',
    flags: target,
    async run(ctx, f) {
      const t = targetOf(f);
      const removed = await removeBudget(ctx.db(), t, actorOf(f));
      return { json: { id: removed.id, removed: true }, text: [`removed the ${t.period} budget of ${t.scope} ${t.scopeId} (${removed.id})`] };
    },
  },
  'budget list': {
    usage: 'budget list --workspace W',
    summary: "list a workspace's budgets with their spend in the current period, what is left and when they reset",
    flags: { workspace: ws },
    async run(ctx, f) {
      const db = ctx.db();
      await getWorkspace(db, f.workspace as string);
      const rows = (await workspaceBudgets(db, f.workspace as string, new Date())).map(budgetRow);
      return { json: rows, text: rows.length ? rows.map(budgetLine) : ['no budgets'] };
    },
  },
};
