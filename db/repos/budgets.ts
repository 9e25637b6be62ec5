// Budgets' counters: which budgets apply to a create, the period counters a budgeted create locks
// and adds its price to, the adjustment a job's refund or recharge makes to the counter its charge
// went to, the standing of a budget (spent, remaining, reset) and its threshold alerts, written to
// the webhook outbox. The rules are in docs/api/budgets.md; the period arithmetic in shared/budgets.ts.
import { sql } from 'kysely';
import type { Queryable, Tx } from '../index.js';
import type { Budget } from '../schema.js';
import { periodEnd, periodStart, thresholdsReached, type BudgetPeriod, type BudgetThresholdEvent } from '../../shared/budgets.js';
import { WEBHOOK_DELIVERIES_CHANNEL } from './webhooks.js';
import { fanOutToEndpoints } from './webhook-endpoints.js';
import { appendWorkspaceEvent } from './workspace-events.js';

export type { Budget } from '../schema.js';

/** The webhook event a budget emits when its period's spend reaches an alert threshold. */
export const BUDGET_THRESHOLD_EVENT = 'budget.threshold_reached';

/** A budget applies to the create: it must be made under the budgets' counters (jobs/budgets.ts). Nothing was written. */
export class BudgetsApplyError extends Error {
  override name = 'BudgetsApplyError';
  constructor() {
    super('a budget applies to this create');
  }
}

export class BudgetExceededError extends Error {
  override name = 'BudgetExceededError';
  constructor(
    readonly budget: Pick<Budget, 'id' | 'scope' | 'scope_id' | 'period' | 'limit_credits'>,
    readonly required: number,
    readonly remaining: number,
    readonly resetsAt: Date,
  ) {
    super(`the ${budget.period}ly budget of ${budget.scope} ${budget.scope_id} has ${remaining} of ${budget.limit_credits} credits left; ${required} required`);
  }
}

/** The budgets of a create's key and project (fixed order: the order their counters are locked in). */
export async function budgetsFor(q: Queryable, workspaceId: string, apiKeyId: string, projectId: string): Promise<Budget[]> {
  return q
    .selectFrom('budgets')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where((eb) =>
      eb.or([eb.and([eb('scope', '=', 'key'), eb('scope_id', '=', apiKeyId)]), eb.and([eb('scope', '=', 'project'), eb('scope_id', '=', projectId)])]),
    )
    .orderBy('id')
    .execute();
}

/** The SQL condition "job j is in the budget's scope". */
const inScope = (b: Pick<Budget, 'scope' | 'scope_id'>) =>
  b.scope === 'key' ? sql<boolean>`j.api_key_id = ${b.scope_id}` : sql<boolean>`j.project_id = ${b.scope_id}`;

/**
 * The net credits the ledger holds for the scope's jobs created in [start, end): where a period's
 * counter starts when it is first made (a budget set mid-period counts what was already spent).
 */
function ledgerNet(b: Pick<Budget, 'workspace_id' | 'scope' | 'scope_id'>, start: Date, end: Date) {
  return sql<number>`(select coalesce(-sum(l.delta), 0)::int from credit_ledger l join jobs j on j.id = l.job_id
     where j.workspace_id = ${b.workspace_id} and ${inScope(b)} and j.created_at >= ${start} and j.created_at < ${end})`;
}

/**
 * Makes the budget's counter for the period starting at `start` if missing, from the ledger's net
 * spend of its scope in the period, and ties the jobs so counted to it (their refunds adjust it).
 * Concurrent makers wait on the primary key: one inserts, the others find it.
 */
async function ensurePeriod(tx: Tx, b: Budget, start: Date): Promise<void> {
  const end = periodEnd(b.period, start);
  await sql`
    with made as (
      insert into budget_spend (budget_id, period_start, spent) values (${b.id}, ${start}, ${ledgerNet(b, start, end)})
      on conflict do nothing returning budget_id
    )
    insert into budget_charges (job_id, budget_id, period_start)
    select j.id, ${b.id}, ${start}::timestamptz from jobs j
     where exists (select 1 from made) and j.workspace_id = ${b.workspace_id} and ${inScope(b)} and j.created_at >= ${start} and j.created_at < ${end}
    on conflict do nothing`.execute(tx);
}

interface LockedCounter {
  budget: Budget;
  start: Date;
  spent: number;
  alertedPct: number;
}

/**
 * The counters of `budgets` for the periods `now` falls in, made if missing and locked for the
 * caller's transaction, in budget id order (two creates lock them in the same order: no deadlock).
 */
export async function lockCounters(tx: Tx, budgets: Budget[], now: Date): Promise<LockedCounter[]> {
  const sorted = [...budgets].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const out: LockedCounter[] = [];
  for (const budget of sorted) {
    const start = periodStart(budget.period, now);
    await ensurePeriod(tx, budget, start);
    const row = await tx
      .selectFrom('budget_spend')
      .select(['spent', 'alerted_pct'])
      .where('budget_id', '=', budget.id)
      .where('period_start', '=', start)
      .forUpdate()
      .executeTakeFirstOrThrow();
    out.push({ budget, start, spent: row.spent, alertedPct: row.alerted_pct });
  }
  return out;
}

/**
 * A budgeted create's charge of `price` counted in its locked counters; the thresholds it reaches
 * are recorded and each written once to the webhook outbox (to the budget's alert URL, if any, and
 * to the workspace's endpoints subscribed to budget events).
 */
export async function countCharge(tx: Tx, jobId: string, counters: LockedCounter[], price: number): Promise<Array<{ budgetId: string; threshold: number }>> {
  const alerts: Array<{ budgetId: string; threshold: number }> = [];
  for (const c of counters) {
    const spent = c.spent + price;
    const reached = thresholdsReached(c.budget.alert_at, c.budget.limit_credits, spent, c.alertedPct);
    const alertedPct = reached.length ? reached[reached.length - 1]! : c.alertedPct;
    await tx
      .updateTable('budget_spend')
      .set({ spent: sql`spent + ${price}`, alerted_pct: alertedPct })
      .where('budget_id', '=', c.budget.id)
      .where('period_start', '=', c.start)
      .execute();
    await tx
      .insertInto('budget_charges')
      .values({ job_id: jobId, budget_id: c.budget.id, period_start: c.start })
      .onConflict((oc) => oc.doNothing())
      .execute();
    for (const threshold of reached) {
      alerts.push({ budgetId: c.budget.id, threshold });
      await writeThresholdEvent(tx, c, threshold, spent);
    }
  }
  return alerts;
}

/**
 * One `budget.threshold_reached` event: in the workspace's event log always, in the webhook outbox
 * when the budget has an alert URL. Its id is the budget, the period and the threshold: the primary
 * keys keep it to one per period even if written twice.
 */
async function writeThresholdEvent(tx: Tx, c: LockedCounter, threshold: number, spent: number): Promise<void> {
  const b = c.budget;
  const id = `whk_${b.id}_${c.start.toISOString().slice(0, 10).replaceAll('-', '')}_${threshold}`;
  const payload: BudgetThresholdEvent['data'] = {
    budget: { id: b.id, scope: b.scope, scope_id: b.scope_id, period: b.period, limit: b.limit_credits },
    threshold,
    spent,
    limit: b.limit_credits,
    period: { start: c.start.toISOString(), resets_at: periodEnd(b.period, c.start).toISOString() },
  };
  await appendWorkspaceEvent(tx, { id, workspaceId: b.workspace_id, type: BUDGET_THRESHOLD_EVENT, subjectId: b.id, data: payload });
  if (b.alert_url) {
    const r = await tx
      .insertInto('webhook_deliveries')
      .values({ id, job_id: null, workspace_id: b.workspace_id, type: BUDGET_THRESHOLD_EVENT, url: b.alert_url, job: JSON.stringify(payload) })
      .onConflict((oc) => oc.doNothing())
      .returning('id')
      .executeTakeFirst();
    if (r) await sql`select pg_notify(${WEBHOOK_DELIVERIES_CHANNEL}, ${id})`.execute(tx);
  }
  // The workspace's endpoints subscribed to budget events get it too, with the same event id.
  await fanOutToEndpoints(tx, { workspaceId: b.workspace_id, type: BUDGET_THRESHOLD_EVENT, eventId: id, jobId: null, data: payload });
}

/**
 * A settlement of the job moved `charged` credits (positive charged, negative refunded): the
 * counters its charge went to move by as much. A data-modifying statement for the settlement's own
 * statement (db/repos/job-ledger.ts), so it costs no round trip; a job no budget counted changes nothing.
 */
export function jobSpendAdjustment(jobId: string, charged: number) {
  return sql`update budget_spend s set spent = s.spent + ${charged}
     from budget_charges c where c.job_id = ${jobId} and s.budget_id = c.budget_id and s.period_start = c.period_start`;
}

export interface BudgetStanding {
  budget: Budget;
  periodStart: Date;
  resetsAt: Date;
  spent: number;
  remaining: number;
}

/** Where the budget stands at `now`, read only: its counter, or the ledger's net for a period not yet counted. */
export async function standingOf(q: Queryable, budget: Budget, now: Date): Promise<BudgetStanding> {
  const start = periodStart(budget.period, now);
  const end = periodEnd(budget.period, start);
  const row = await sql<{ spent: number }>`
    select coalesce((select spent from budget_spend where budget_id = ${budget.id} and period_start = ${start}), ${ledgerNet(budget, start, end)}) as spent`.execute(
    q,
  );
  const spent = Number(row.rows[0]!.spent);
  return { budget, periodStart: start, resetsAt: end, spent, remaining: Math.max(0, budget.limit_credits - spent) };
}

/** The workspace's budgets, with where each stands at `now` (scope, then period order). */
export async function workspaceBudgets(q: Queryable, workspaceId: string, now: Date): Promise<BudgetStanding[]> {
  const budgets = await q
    .selectFrom('budgets')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('scope')
    .orderBy('scope_id')
    .orderBy('period')
    .execute();
  const out: BudgetStanding[] = [];
  for (const b of budgets) out.push(await standingOf(q, b, now));
  return out;
}

/** The first budget among `standings` that `price` more would pass, if any. */
export function refusingBudget<S extends Pick<BudgetStanding, 'budget' | 'spent'>>(standings: S[], price: number): S | undefined {
  return standings.find((s) => s.spent + price > s.budget.limit_credits);
}

export type { BudgetPeriod };
