// Webhook signing secrets (per workspace, stored encrypted) and the delivery outbox
// (`webhook_deliveries`, written by the 0007_webhooks trigger on each requested status move).
import { sql } from 'kysely';
import type { Database, Queryable } from '../index.js';
import type { WebhookDelivery } from '../schema.js';
import { newId } from '../../shared/ids.js';
import { getWorkspace, requireOwner } from './workspaces.js';
import { decryptSecret, encryptSecret, generateWebhookSecret } from '../../shared/webhook-signing.js';

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
      .values({ id, workspace_id: input.workspaceId, secret_encrypted: encryptSecret(input.key, secret, id, input.workspaceId), created_by: input.actorEmail.trim().toLowerCase() })
      .execute();
    return { id, secret, previousUntil: previous[0]?.expires_at ?? null };
  });
}

/** The workspace's secrets that sign now (newest first), decrypted. */
export async function activeWebhookSecrets(db: Queryable, workspaceId: string, key: Buffer): Promise<string[]> {
  const rows = await db
    .selectFrom('webhook_secrets')
    .select(['id', 'secret_encrypted'])
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
    .orderBy('created_at', 'desc')
    .execute();
  return rows.map((r) => decryptSecret(key, r.secret_encrypted, r.id, workspaceId));
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

/** Events whose delivery workflow has not been started yet, oldest first. */
export async function undispatchedDeliveries(db: Queryable, limit = 100): Promise<Pick<WebhookDelivery, 'id' | 'job_id' | 'workspace_id' | 'type' | 'url' | 'job'>[]> {
  return db
    .selectFrom('webhook_deliveries')
    .select(['id', 'job_id', 'workspace_id', 'type', 'url', 'job'])
    .where('dispatched_at', 'is', null)
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

export async function markDispatched(db: Queryable, id: string): Promise<void> {
  await db.updateTable('webhook_deliveries').set({ dispatched_at: sql`now()` }).where('id', '=', id).where('dispatched_at', 'is', null).execute();
}

/** One attempt's outcome; `delivered` sets delivered_at (once). */
export async function recordAttempt(db: Queryable, id: string, outcome: { status: number | null; error: string | null; delivered: boolean }): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({
      attempts: sql`attempts + 1`,
      last_status: outcome.status,
      last_error: outcome.error,
      ...(outcome.delivered ? { delivered_at: sql`coalesce(delivered_at, now())` } : {}),
    })
    .where('id', '=', id)
    .execute();
}

export async function markDeliveryFailed(db: Queryable, id: string, error: string): Promise<void> {
  await db.updateTable('webhook_deliveries').set({ failed_at: sql`now()`, last_error: error }).where('id', '=', id).where('delivered_at', 'is', null).execute();
}
