// The webhook outbox's dispatch claims (0046_control_claims): the dispatcher (worker/webhook-dispatcher.ts)
// claims a batch of undispatched events before starting their delivery workflows, so two dispatchers
// (a control lease handed over mid-pass) never start the same delivery.
import { sql } from 'kysely';
import type { Queryable } from '../index.js';
import type { WebhookDelivery } from '../schema.js';

/** An outbox row claimed for dispatch (claimUndispatchedDeliveries). */
export type ClaimedDelivery = Pick<WebhookDelivery, 'id' | 'job_id' | 'workspace_id' | 'type' | 'url' | 'job' | 'created_at'>;

/**
 * Claims up to `limit` events whose delivery workflow has not been started yet, oldest first, for
 * `claimMs`, leaving out workspaces that already have `workspaceCap` deliveries in flight (their
 * events wait, in order, for one to finish) and rows another dispatcher holds (locked, or claimed
 * and not expired), so concurrent dispatchers never start the same delivery.
 */
export async function claimUndispatchedDeliveries(db: Queryable, limit: number, workspaceCap: number, claimMs: number): Promise<ClaimedDelivery[]> {
  const rows = await sql<ClaimedDelivery>`
    with picked as (
      select id from webhook_deliveries
      where dispatched_at is null
        and (dispatch_claimed_until is null or dispatch_claimed_until < now())
        and workspace_id not in (
          select workspace_id from webhook_deliveries where dispatched_at is not null and delivered_at is null and failed_at is null and superseded_at is null group by workspace_id having count(*) >= ${workspaceCap})
      order by created_at
      limit ${limit}
      for update skip locked)
    update webhook_deliveries d set dispatch_claimed_until = now() + make_interval(secs => ${claimMs / 1000})
    from picked where d.id = picked.id
    returning d.id, d.job_id, d.workspace_id, d.type, d.url, d.job, d.created_at`.execute(db);
  return rows.rows.sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || (a.id < b.id ? -1 : 1));
}

/** Gives claims back (events left for a later pass: their workspace at its cap, a failed start). */
export async function releaseDispatchClaims(db: Queryable, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable('webhook_deliveries').set({ dispatch_claimed_until: null }).where('id', 'in', ids).where('dispatched_at', 'is', null).execute();
}
