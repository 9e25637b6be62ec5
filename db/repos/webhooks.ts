// Webhook signing secrets (per workspace, stored encrypted) and the delivery outbox
// (`webhook_deliveries`, written by the 0007_webhooks trigger on each requested status move).
import { sql, type ExpressionBuilder, type Selectable } from 'kysely';
import type { Database, Queryable } from '../index.js';
import type { DB, WebhookCircuitTable, WebhookDelivery } from '../schema.js';
import {
  admitAttempt,
  closedCircuit,
  recordOutcome,
  type Admission,
  type AttemptOutcome,
  type Circuit,
  type CircuitPolicy,
} from '../../shared/webhooks/circuit.js';
import { newId } from '../../shared/ids.js';
import { getWorkspace, normalizeEmail, requireOwner } from './workspaces.js';
import { recordAuditEvent } from './audit.js';
import { operatorFor } from '../../shared/audit.js';
import { decryptSecret, encryptSecret, generateWebhookSecret } from '../../shared/webhooks/signing.js';

// ------------------------------------------------------------------ secrets

/**
 * Creates the workspace's new signing secret on behalf of an owner; every secret still signing
 * keeps signing for `graceSeconds` more (0: stops now). Returns the secret in clear: the only time.
 */
export async function rotateWebhookSecret(
  db: Database,
  input: { workspaceId: string; actorEmail: string; graceSeconds: number; key: Buffer },
): Promise<{ id: string; secret: string; previousUntil: Date | null }> {
  return db.transaction().execute(async (tx) => {
    await getWorkspace(tx, input.workspaceId);
    await requireOwner(tx, input.workspaceId, input.actorEmail);
    // One rotation at a time per workspace.
    await sql`select pg_advisory_xact_lock(hashtext(${`webhook_secrets/${input.workspaceId}`}))`.execute(tx);
    const previous = await tx
      .updateTable('webhook_secrets')
      .set({ expires_at: sql`now() + make_interval(secs => ${input.graceSeconds})` })
      .where('workspace_id', '=', input.workspaceId)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now() + make_interval(secs => ${input.graceSeconds})`)]))
      .returning('expires_at')
      .execute();
    const id = newId('whs');
    const secret = generateWebhookSecret();
    await tx
      .insertInto('webhook_secrets')
      .values({
        id,
        workspace_id: input.workspaceId,
        secret_encrypted: encryptSecret(input.key, secret, id, input.workspaceId),
        created_by: input.actorEmail.trim().toLowerCase(),
      })
      .execute();
    const previousUntil = previous[0]?.expires_at ?? null;
    // The secret's id and the grace period, never the secret.
    await recordAuditEvent(tx, {
      workspaceId: input.workspaceId,
      action: 'webhook_secret.rotated',
      actor: operatorFor(normalizeEmail(input.actorEmail)),
      targetType: 'webhook_secret',
      targetId: id,
      details: { grace_seconds: input.graceSeconds, previous_signs_until: previousUntil?.toISOString() ?? null },
    });
    return { id, secret, previousUntil };
  });
}

/** The workspace's secrets that sign now (newest first), decrypted. */
export async function activeWebhookSecrets(db: Queryable, workspaceId: string, key: Buffer | readonly Buffer[]): Promise<string[]> {
  const rows = await db
    .selectFrom('webhook_secrets')
    .select(['id', 'secret_encrypted'])
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
    .orderBy('created_at', 'desc')
    .execute();
  return rows.map((r) => decryptSecret(key, r.secret_encrypted, r.id, workspaceId));
}

/**
 * The secrets that sign now (newest first), decrypted, skipping any that cannot be decrypted (a
 * corrupted row, or one written under another WEBHOOK_SECRETS_KEY): one bad secret must not stop
 * the workspace's deliveries while another one still signs. Names the ids skipped, never a value.
 */
export async function signingSecrets(
  db: Queryable,
  workspaceId: string,
  key: Buffer | readonly Buffer[],
): Promise<{ secrets: string[]; undecryptable: string[] }> {
  const rows = await db
    .selectFrom('webhook_secrets')
    .select(['id', 'secret_encrypted'])
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
    .orderBy('created_at', 'desc')
    .execute();
  const secrets: string[] = [];
  const undecryptable: string[] = [];
  for (const r of rows) {
    try {
      secrets.push(decryptSecret(key, r.secret_encrypted, r.id, workspaceId));
    } catch {
      undecryptable.push(r.id);
    }
  }
  return { secrets, undecryptable };
}

export async function hasActiveWebhookSecret(db: Queryable, workspaceId: string): Promise<boolean> {
  const row = await db
    .selectFrom('webhook_secrets')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
    .executeTakeFirst();
  return row !== undefined;
}

// ------------------------------------------------------------------ deliveries (the outbox)

export async function getDelivery(db: Queryable, id: string): Promise<WebhookDelivery | undefined> {
  return db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function deliveriesOfJob(db: Queryable, jobId: string): Promise<WebhookDelivery[]> {
  return db.selectFrom('webhook_deliveries').selectAll().where('job_id', '=', jobId).orderBy('created_at').orderBy('id').execute();
}

/** The dispatcher's channel: a new event, or a delivery that finished (its workspace may dispatch more). */
export const WEBHOOK_DELIVERIES_CHANNEL = 'webhook_deliveries';

/** Deliveries dispatched and not finished (delivered, given up or superseded). */
const inFlight = sql<boolean>`dispatched_at is not null and delivered_at is null and failed_at is null and superseded_at is null`;

/** Deliveries in flight per workspace, for the given workspaces. */
export async function inFlightByWorkspace(db: Queryable, workspaceIds: string[]): Promise<Map<string, number>> {
  if (workspaceIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select(['workspace_id', sql<string>`count(*)`.as('n')])
    .where('workspace_id', 'in', workspaceIds)
    .where(inFlight)
    .groupBy('workspace_id')
    .execute();
  return new Map(rows.map((r) => [r.workspace_id, Number(r.n)]));
}

/** Whether a later event of the job reports it canceled by its customer (job.failed with error.code `canceled`). */
export async function canceledLater(db: Queryable, delivery: Pick<WebhookDelivery, 'id' | 'job_id' | 'created_at'>): Promise<boolean> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('job_id', '=', delivery.job_id)
    .where('id', '!=', delivery.id)
    .where('created_at', '>=', delivery.created_at)
    .where('type', '=', 'job.failed')
    .where(sql<string>`job->'error'->>'code'`, '=', 'canceled')
    .executeTakeFirst();
  return row !== undefined;
}

/** The event will not be delivered: a later event of its job makes it moot. */
export async function markSuperseded(db: Database, id: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx
      .updateTable('webhook_deliveries')
      .set({ superseded_at: sql`now()` })
      .where('id', '=', id)
      .where('delivered_at', 'is', null)
      .execute();
    await sql`select pg_notify(${WEBHOOK_DELIVERIES_CHANNEL}, ${id})`.execute(tx);
  });
}

/** Removes finished events (delivered, given up or superseded) created before `before`; returns how many. */
export async function sweepFinishedDeliveries(db: Queryable, before: Date, limit = 5_000): Promise<number> {
  const r = await db
    .deleteFrom('webhook_deliveries')
    .where(
      'id',
      'in',
      db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('created_at', '<', before)
        .where((eb) => eb.or([eb('delivered_at', 'is not', null), eb('failed_at', 'is not', null), eb('superseded_at', 'is not', null)]))
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

export async function markDispatched(db: Queryable, id: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ dispatched_at: sql`now()` })
    .where('id', '=', id)
    .where('dispatched_at', 'is', null)
    .execute();
}

/** An attempt about to send its request: counted now, so one cut short (timeout, worker gone) still counts. */
export async function countAttempt(db: Queryable, id: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ attempts: sql`attempts + 1` })
    .where('id', '=', id)
    .execute();
}

/**
 * One attempt's outcome (`counted`: countAttempt already counted it); `delivered` sets delivered_at
 * (once) and tells the dispatcher its workspace has room.
 */
export async function recordAttempt(
  db: Queryable,
  id: string,
  outcome: { status: number | null; error: string | null; delivered: boolean; counted?: boolean },
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({
      attempts: outcome.counted ? sql`attempts` : sql`attempts + 1`,
      last_status: outcome.status,
      last_error: outcome.error,
      ...(outcome.delivered ? { delivered_at: sql`coalesce(delivered_at, now())` } : {}),
    })
    .where('id', '=', id)
    .execute();
  if (outcome.delivered) await sql`select pg_notify(${WEBHOOK_DELIVERIES_CHANNEL}, ${id})`.execute(db);
}

/**
 * The event is given up. `attempts`: the attempts its workflow made, which may exceed those the
 * attempts themselves recorded (an attempt cut by its timeout or its worker's death records none).
 * Repeating it (a retried activity) changes nothing.
 */
export async function markDeliveryFailed(db: Queryable, id: string, error: string, attempts = 0): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({
      failed_at: sql`coalesce(failed_at, now())`,
      last_error: error,
      attempts: sql`greatest(attempts, ${attempts})`,
      next_retry_at: null,
      circuit_open_until: null,
    })
    .where('id', '=', id)
    .where('delivered_at', 'is', null)
    .execute();
  await sql`select pg_notify(${WEBHOOK_DELIVERIES_CHANNEL}, ${id})`.execute(db);
}

// ------------------------------------------------------------------ circuits (one per workspace and destination)

interface CircuitKey {
  workspaceId: string;
  /** The receiver's URL host (with its port when not the default). */
  destination: string;
}

type CircuitRow = Selectable<WebhookCircuitTable>;

const circuitOf = (r: CircuitRow): Circuit => ({
  state: r.state,
  failures: r.failures,
  failingSince: r.failing_since,
  lastFailureAt: r.last_failure_at,
  openUntil: r.open_until,
  trialsAdmitted: r.trials_admitted,
  trialFailures: r.trial_failures,
  trialsStartedAt: r.trials_started_at,
});

const columnsOf = (c: Circuit) => ({
  state: c.state,
  failures: c.failures,
  failing_since: c.failingSince,
  last_failure_at: c.lastFailureAt,
  open_until: c.openUntil,
  trials_admitted: c.trialsAdmitted,
  trial_failures: c.trialFailures,
  trials_started_at: c.trialsStartedAt,
  updated_at: sql<Date>`now()`,
});

const whereKey = (k: CircuitKey) => (eb: ExpressionBuilder<DB, 'webhook_circuits'>) =>
  eb.and([eb('workspace_id', '=', k.workspaceId), eb('destination', '=', k.destination)]);

export async function getCircuit(db: Queryable, k: CircuitKey): Promise<Circuit> {
  const row = await db.selectFrom('webhook_circuits').selectAll().where(whereKey(k)).executeTakeFirst();
  return row ? circuitOf(row) : closedCircuit;
}

/**
 * Applies `step` to the circuit under its row lock (the row is created closed when missing) and
 * writes what it returns when that differs; two workers deciding at once see each other's writes.
 */
async function changeCircuit<T>(db: Database, k: CircuitKey, step: (c: Circuit, now: Date) => { next: Circuit; result: T }): Promise<T> {
  return db.transaction().execute(async (tx) => {
    await tx
      .insertInto('webhook_circuits')
      .values({ workspace_id: k.workspaceId, destination: k.destination })
      .onConflict((oc) => oc.doNothing())
      .execute();
    const row = await tx.selectFrom('webhook_circuits').selectAll().where(whereKey(k)).forUpdate().executeTakeFirstOrThrow();
    const current = circuitOf(row);
    const { next, result } = step(current, new Date());
    if (next !== current) await tx.updateTable('webhook_circuits').set(columnsOf(next)).where(whereKey(k)).execute();
    return result;
  });
}

/**
 * Whether an attempt may go out now. A closed circuit (the usual case) costs one read and no
 * write; an open or half-open one is decided under its row lock, so the trials admitted are counted
 * exactly across the fleet.
 */
export async function admitToCircuit(db: Database, k: CircuitKey, policy: CircuitPolicy): Promise<Admission> {
  if ((await getCircuit(db, k)).state === 'closed') return { admitted: true, trial: false };
  return changeCircuit(db, k, (c, now) => {
    const { admission, next } = admitAttempt(c, now, policy);
    return { next, result: admission };
  });
}

/** An attempt's outcome; a success at a closed circuit without failures writes nothing. */
export async function recordCircuitOutcome(db: Database, k: CircuitKey, outcome: AttemptOutcome, trial: boolean, policy: CircuitPolicy): Promise<Circuit> {
  const seen = await getCircuit(db, k);
  if (recordOutcome(seen, outcome, trial, new Date(), policy) === seen && seen.state === 'closed') return seen;
  return changeCircuit(db, k, (c, now) => {
    const next = recordOutcome(c, outcome, trial, now, policy);
    return { next, result: next };
  });
}

/**
 * Circuits open or half-open, per workspace: the open-circuits gauge. Deliveries waiting on a circuit
 * move it at least once per cooldown and trial round, so one untouched since `activeSince` has none
 * waiting (they were delivered or given up) and is left out.
 */
export async function openCircuitsByWorkspace(db: Queryable, activeSince: Date): Promise<Array<{ workspaceId: string; open: number }>> {
  const rows = await db
    .selectFrom('webhook_circuits')
    .select(['workspace_id', sql<number>`count(*)::int`.as('n')])
    .where('state', '<>', 'closed')
    .where('updated_at', '>=', activeSince)
    .groupBy('workspace_id')
    .execute();
  return rows.map((r) => ({ workspaceId: r.workspace_id, open: r.n }));
}

/** Removes circuits untouched since `before` (a circuit's history is minutes long); returns how many. */
export async function sweepIdleCircuits(db: Queryable, before: Date): Promise<number> {
  const r = await db.deleteFrom('webhook_circuits').where('updated_at', '<', before).executeTakeFirst();
  return Number(r.numDeletedRows);
}
