// The workspace's balance as GET /v1/balance states it, read in one statement (one snapshot), and
// the owner's low-balance alert settings, written with their audit event in one transaction. The
// `balance.low` events themselves are written by the balance's trigger (0100_balance_alerts).
import { sql } from 'kysely';
import type { Database, Queryable } from '../index.js';
import { recordAuditEvent } from './audit.js';
import type { AuditActor } from '../../shared/audit.js';

interface BalanceSnapshot {
  available: number;
  held: number;
  granted: number;
  deducted: number;
  spent: number;
  refunded: number;
  thresholds: number[];
  alertUrl: string | null;
}

/**
 * The balance of the workspace (undefined: no such workspace), every figure from one statement:
 * - available: the balance creates spend from (`workspaces.credits`, which nets the whole ledger);
 * - held: what the workspace's jobs still in flight (pending, generating) have been charged, net
 *   (their `credits_charged - credits_refunded`, which their ledger rows' statements keep equal to
 *   their ledger); a failure refunds it, a completion keeps it;
 * - in [start, end): credits granted and deducted by the operator, charged (charges and recharges)
 *   and refunded, from the ledger rows written in the period (`credit_ledger_usage_idx`).
 */
export async function readBalance(q: Queryable, workspaceId: string, start: Date, end: Date): Promise<BalanceSnapshot | undefined> {
  const { rows } = await sql<{
    available: number;
    held: number;
    granted: number;
    deducted: number;
    spent: number;
    refunded: number;
    thresholds: number[] | null;
    url: string | null;
  }>`
    select w.credits as available,
           (select coalesce(sum(j.credits_charged - j.credits_refunded), 0)::int from jobs j
             where j.workspace_id = w.id and j.status in ('pending', 'generating')) as held,
           p.granted, p.deducted, p.spent, p.refunded, a.thresholds, a.url
      from workspaces w
      left join balance_alerts a on a.workspace_id = w.id
      cross join lateral (
        select coalesce(sum(l.delta) filter (where l.reason = 'grant'), 0)::int as granted,
               coalesce(-sum(l.delta) filter (where l.reason = 'deduct'), 0)::int as deducted,
               coalesce(-sum(l.delta) filter (where l.reason in ('charge', 'recharge')), 0)::int as spent,
               coalesce(sum(l.delta) filter (where l.reason = 'refund'), 0)::int as refunded
          from credit_ledger l
         where l.workspace_id = w.id and l.created_at >= ${start} and l.created_at < ${end}
      ) p
     where w.id = ${workspaceId}`.execute(q);
  const r = rows[0];
  if (!r) return undefined;
  return {
    available: r.available,
    held: r.held,
    granted: r.granted,
    deducted: r.deducted,
    spent: r.spent,
    refunded: r.refunded,
    thresholds: r.thresholds ?? [],
    alertUrl: r.url,
  };
}

export interface BalanceAlerts {
  thresholds: number[];
  url: string | null;
}

/** What the audit event says of the settings: the receiver's origin, never a path or query that may carry a token. */
const auditView = (a: BalanceAlerts) => ({ thresholds: a.thresholds, url: a.url === null ? null : new URL(a.url).origin });

/**
 * Replaces the workspace's alert settings and records `balance.alerts_set` (old and new values) by
 * `actor`, in one transaction; the row lock orders two owners setting them at once.
 */
export async function setBalanceAlerts(
  db: Database,
  workspaceId: string,
  next: BalanceAlerts,
  actor: AuditActor,
): Promise<{ previous: BalanceAlerts; current: BalanceAlerts }> {
  return db.transaction().execute(async (tx) => {
    const old = await tx.selectFrom('balance_alerts').select(['thresholds', 'url']).where('workspace_id', '=', workspaceId).forUpdate().executeTakeFirst();
    const previous = old ?? { thresholds: [], url: null };
    const current = await tx
      .insertInto('balance_alerts')
      .values({ workspace_id: workspaceId, thresholds: next.thresholds, url: next.url })
      .onConflict((oc) => oc.column('workspace_id').doUpdateSet({ thresholds: next.thresholds, url: next.url, updated_at: sql`now()` }))
      .returning(['thresholds', 'url'])
      .executeTakeFirstOrThrow();
    await recordAuditEvent(tx, {
      workspaceId,
      action: 'balance.alerts_set',
      actor,
      targetType: 'workspace',
      targetId: workspaceId,
      details: { old: auditView(previous), new: auditView(current) },
    });
    return { previous, current };
  });
}
