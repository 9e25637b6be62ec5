// The customer's view of the webhook outbox: each event's attempts (`webhook_attempts`,
// 0031_webhook_attempts), the workspace's newest-first list, and redelivery of a finished event.
import { sql, type ExpressionBuilder, type SelectQueryBuilder } from 'kysely';
import type { Database, Queryable } from '../index.js';
import { createdMicros, newestFirstPage, olderThan, type NewestFirstKey } from './newest-first.js';
import type { DB, WebhookAttempt, WebhookDelivery } from '../schema.js';
import type { DeliveryStatus } from '../../shared/webhooks/attempts.js';
import { WEBHOOK_DELIVERIES_CHANNEL } from './webhooks.js';
import { BUDGET_THRESHOLD_EVENT } from './budgets.js';

/**
 * Events a tenant never sees in its delivery log nor redelivers: they go to a URL the operator set
 * (a budget's alert URL, read-only to the workspace), so listing them would show the tenant the
 * operator's endpoint, and redelivering them would let it send requests there at will.
 */
const operatorOnlyEventTypes: readonly string[] = [BUDGET_THRESHOLD_EVENT];

/** What the tenant sees: every delivery but those to the operator's URLs (its own endpoints' deliveries of any type are its own). */
const customerVisible = (eb: ExpressionBuilder<DB, 'webhook_deliveries'>) =>
  eb.or([eb('endpoint_id', 'is not', null), eb('type', 'not in', operatorOnlyEventTypes)]);

// ------------------------------------------------------------------ attempts (written by the delivery activity)

/**
 * An attempt about to send, keyed by its activity attempt (`<workflow id>/<run id>/<activity id>/<attempt>`):
 * a repeated write returns the row already there. Returns its number across the event and how many
 * attempts its workflow run has made with it included (the run's backoff step).
 */
export async function startAttempt(db: Database, deliveryId: string, runKey: string, attemptKey: string): Promise<{ number: number; ofRun: number }> {
  return db.transaction().execute(async (tx) => {
    // One writer per event at a time: numbers are dense and in order.
    await sql`select pg_advisory_xact_lock(hashtext(${`webhook_attempts/${deliveryId}`}))`.execute(tx);
    await tx
      .insertInto('webhook_attempts')
      .values({
        delivery_id: deliveryId,
        attempt_key: attemptKey,
        number: sql<number>`(select coalesce(max(number), 0) + 1 from webhook_attempts where delivery_id = ${deliveryId})`,
      })
      .onConflict((oc) => oc.column('attempt_key').doNothing())
      .execute();
    const row = await tx
      .selectFrom('webhook_attempts')
      .select([
        'number',
        sql<number>`(select count(*)::int from webhook_attempts a where a.delivery_id = ${deliveryId} and starts_with(a.attempt_key, ${`${runKey}/`}))`.as(
          'of_run',
        ),
      ])
      .where('attempt_key', '=', attemptKey)
      .executeTakeFirstOrThrow();
    await tx.updateTable('webhook_deliveries').set({ next_retry_at: null, circuit_open_until: null }).where('id', '=', deliveryId).execute();
    return { number: row.number, ofRun: row.of_run };
  });
}

/** The attempt's outcome, and on the event when the next attempt is due (null: none scheduled). */
export async function finishAttempt(
  db: Queryable,
  deliveryId: string,
  attemptKey: string,
  outcome: { statusCode: number | null; errorClass: string | null; latencyMs: number | null; nextRetryAt: Date | null },
): Promise<void> {
  await db
    .updateTable('webhook_attempts')
    .set({ status_code: outcome.statusCode, error_class: outcome.errorClass, latency_ms: outcome.latencyMs, next_retry_at: outcome.nextRetryAt })
    .where('attempt_key', '=', attemptKey)
    .execute();
  await db.updateTable('webhook_deliveries').set({ next_retry_at: outcome.nextRetryAt }).where('id', '=', deliveryId).execute();
}

/** The event waits for its destination's open circuit until `until`: no attempt, the next one is due then. */
export async function markCircuitWait(db: Queryable, deliveryId: string, until: Date): Promise<void> {
  await db.updateTable('webhook_deliveries').set({ circuit_open_until: until, next_retry_at: until }).where('id', '=', deliveryId).execute();
}

export async function attemptsOf(db: Queryable, deliveryIds: string[]): Promise<Map<string, WebhookAttempt[]>> {
  const out = new Map<string, WebhookAttempt[]>(deliveryIds.map((id) => [id, []]));
  if (deliveryIds.length === 0) return out;
  const rows = await db.selectFrom('webhook_attempts').selectAll().where('delivery_id', 'in', deliveryIds).orderBy('delivery_id').orderBy('number').execute();
  for (const r of rows) out.get(r.delivery_id)!.push(r);
  return out;
}

// ------------------------------------------------------------------ the workspace's list

export type DeliveryListKey = NewestFirstKey;

export interface DeliveryFilters {
  jobId?: string;
  endpointId?: string;
  type?: string;
  status?: DeliveryStatus;
}

export type DeliveryRow = Omit<WebhookDelivery, 'job' | 'dispatch_claimed_until'>;

const listColumns = [
  'id',
  'event_id',
  'endpoint_id',
  'job_id',
  'workspace_id',
  'type',
  'url',
  'created_at',
  'dispatched_at',
  'attempts',
  'last_status',
  'last_error',
  'delivered_at',
  'failed_at',
  'superseded_at',
  'next_retry_at',
  'circuit_open_until',
  'redeliveries',
] as const;

function whereStatus<O>(q: SelectQueryBuilder<DB, 'webhook_deliveries', O>, status: DeliveryStatus) {
  switch (status) {
    case 'delivered':
      return q.where('delivered_at', 'is not', null);
    case 'superseded':
      return q.where('delivered_at', 'is', null).where('superseded_at', 'is not', null);
    case 'failed':
      return q.where('delivered_at', 'is', null).where('superseded_at', 'is', null).where('failed_at', 'is not', null);
    case 'pending':
      return q.where('delivered_at', 'is', null).where('superseded_at', 'is', null).where('failed_at', 'is', null);
  }
}

/** The workspace's events, newest first (webhook_deliveries_list_idx), keyset-paginated on (created_at, id). */
export async function listDeliveriesPage(
  db: Queryable,
  workspaceId: string,
  opts: { limit: number; after: DeliveryListKey | null; filters: DeliveryFilters },
): Promise<{ rows: DeliveryRow[]; next: DeliveryListKey | null }> {
  let q = db.selectFrom('webhook_deliveries').select(listColumns).select(createdMicros()).where('workspace_id', '=', workspaceId).where(customerVisible);
  const f = opts.filters;
  if (f.jobId !== undefined) q = q.where('job_id', '=', f.jobId);
  if (f.endpointId !== undefined) q = q.where('endpoint_id', '=', f.endpointId);
  if (f.type !== undefined) q = q.where('type', '=', f.type);
  if (f.status !== undefined) q = whereStatus(q, f.status);
  if (opts.after) q = q.where(olderThan(opts.after));
  const rows = await q
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(opts.limit + 1)
    .execute();
  return newestFirstPage(rows, opts.limit);
}

/** One event of the workspace (undefined: none, or another workspace's). */
export async function getWorkspaceDelivery(db: Queryable, workspaceId: string, id: string): Promise<DeliveryRow | undefined> {
  return db
    .selectFrom('webhook_deliveries')
    .select(listColumns)
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where(customerVisible)
    .executeTakeFirst();
}

// ------------------------------------------------------------------ redelivery

type RedeliveryStart = { started: DeliveryRow } | { refused: 'not_found' | 'in_flight' };

/**
 * Reopens a finished event of the workspace for one more delivery run: it is pending again (its
 * workspace's in-flight cap counts it) and `redeliveries` numbers the run. An event not finished
 * yet (waiting, retrying, redelivering) is refused.
 */
export async function beginRedelivery(db: Database, workspaceId: string, id: string): Promise<RedeliveryStart> {
  return db.transaction().execute(async (tx) => {
    const row = await tx
      .selectFrom('webhook_deliveries')
      .select(listColumns)
      .where('id', '=', id)
      .where('workspace_id', '=', workspaceId)
      .where(customerVisible)
      .forUpdate()
      .executeTakeFirst();
    if (!row) return { refused: 'not_found' };
    if (!row.delivered_at && !row.failed_at && !row.superseded_at) return { refused: 'in_flight' };
    const started = await tx
      .updateTable('webhook_deliveries')
      .set({
        delivered_at: null,
        failed_at: null,
        superseded_at: null,
        last_error: null,
        next_retry_at: null,
        circuit_open_until: null,
        dispatched_at: sql`coalesce(dispatched_at, now())`,
        redeliveries: sql`redeliveries + 1`,
      })
      .where('id', '=', id)
      .returning(listColumns)
      .executeTakeFirstOrThrow();
    return { started };
  });
}

/** The redelivery's workflow could not be started: the event is finished again (failed), and its workspace has room. */
export async function redeliveryNotStarted(db: Queryable, id: string, message: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ failed_at: sql`coalesce(failed_at, now())`, last_error: message })
    .where('id', '=', id)
    .where('delivered_at', 'is', null)
    .execute();
  await sql`select pg_notify(${WEBHOOK_DELIVERIES_CHANNEL}, ${id})`.execute(db);
}
