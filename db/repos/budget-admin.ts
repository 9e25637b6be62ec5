// The operator's writes of budgets (admin CLI `budget set` / `budget remove`): each one writes one
// audit event (budget.set / budget.removed, with the old and the new values) in its own transaction.
import type { Database } from '../index.js';
import type { Budget } from '../schema.js';
import { recordAuditEvent } from './audit.js';
import { AdminError, getWorkspace } from './workspaces.js';
import { newId } from '../../shared/ids.js';
import type { BudgetPeriod, BudgetScope } from '../../shared/budgets.js';

export interface BudgetTarget {
  workspaceId: string;
  scope: BudgetScope;
  scopeId: string;
  period: BudgetPeriod;
}

/** What an audit event says of a budget (its alert URL names the receiver only, never a secret). */
const auditView = (b: Budget | undefined) =>
  b ? { limit: b.limit_credits, period: b.period, alert_at: b.alert_at, alert_url: b.alert_url === null ? null : new URL(b.alert_url).origin } : null;

async function requireScope(db: Database, t: BudgetTarget): Promise<void> {
  await getWorkspace(db, t.workspaceId);
  const found =
    t.scope === 'key'
      ? await db.selectFrom('api_keys').select('id').where('id', '=', t.scopeId).where('workspace_id', '=', t.workspaceId).executeTakeFirst()
      : await db.selectFrom('projects').select('id').where('id', '=', t.scopeId).where('workspace_id', '=', t.workspaceId).executeTakeFirst();
  if (!found) throw new AdminError('not_found', `${t.scope === 'key' ? 'API key' : 'project'} ${t.scopeId} not found in workspace ${t.workspaceId}`);
}

/** Sets (creates or replaces) the budget of the scope for the period. Returns it with what it replaced. */
export async function setBudget(
  db: Database,
  t: BudgetTarget,
  values: { limit: number; alertAt: number[]; alertUrl: string | null },
  actor: string,
): Promise<{ budget: Budget; previous: Budget | undefined }> {
  await requireScope(db, t);
  return db.transaction().execute(async (tx) => {
    const previous = await tx
      .selectFrom('budgets')
      .selectAll()
      .where('workspace_id', '=', t.workspaceId)
      .where('scope', '=', t.scope)
      .where('scope_id', '=', t.scopeId)
      .where('period', '=', t.period)
      .forUpdate()
      .executeTakeFirst();
    const budget = previous
      ? await tx
          .updateTable('budgets')
          .set({ limit_credits: values.limit, alert_at: values.alertAt, alert_url: values.alertUrl, updated_at: new Date() })
          .where('id', '=', previous.id)
          .returningAll()
          .executeTakeFirstOrThrow()
      : await tx
          .insertInto('budgets')
          .values({
            id: newId('bud'),
            workspace_id: t.workspaceId,
            scope: t.scope,
            scope_id: t.scopeId,
            period: t.period,
            limit_credits: values.limit,
            alert_at: values.alertAt,
            alert_url: values.alertUrl,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
    await recordAuditEvent(tx, {
      workspaceId: t.workspaceId,
      action: 'budget.set',
      actor,
      targetType: 'budget',
      targetId: budget.id,
      details: { scope: t.scope, scope_id: t.scopeId, period: t.period, old: auditView(previous), new: auditView(budget) },
    });
    return { budget, previous };
  });
}

/** Removes the budget of the scope for the period; not_found when there is none. */
export async function removeBudget(db: Database, t: BudgetTarget, actor: string): Promise<Budget> {
  await getWorkspace(db, t.workspaceId);
  return db.transaction().execute(async (tx) => {
    const removed = await tx
      .deleteFrom('budgets')
      .where('workspace_id', '=', t.workspaceId)
      .where('scope', '=', t.scope)
      .where('scope_id', '=', t.scopeId)
      .where('period', '=', t.period)
      .returningAll()
      .executeTakeFirst();
    if (!removed) throw new AdminError('not_found', `no ${t.period} budget for ${t.scope} ${t.scopeId} in workspace ${t.workspaceId}`);
    await recordAuditEvent(tx, {
      workspaceId: t.workspaceId,
      action: 'budget.removed',
      actor,
      targetType: 'budget',
      targetId: removed.id,
      details: { scope: t.scope, scope_id: t.scopeId, period: t.period, old: auditView(removed), new: null },
    });
    return removed;
  });
}
