// Webhook endpoints the customer manages (0110_webhook_endpoints, api/routes/webhook-endpoints.ts):
// their rows, their signing secrets (encrypted at rest like webhook_secrets; a rotation keeps the
// replaced secret signing for an overlap window), the fan-out of an event to the endpoints that
// subscribe to it, and the test ping. Every change is an audit event, in the change's transaction.
import { sql } from 'kysely';
import type { Database, Queryable } from '../index.js';
import type { WebhookEndpoint } from '../webhook-endpoint-schema.js';
import { newId } from '../../shared/ids.js';
import { recordAuditEvent } from './audit.js';
import type { AuditActor } from '../../shared/audit.js';
import { decryptSecret, encryptSecret, generateWebhookSecret } from '../../shared/webhooks/signing.js';
import { MAX_WEBHOOK_ENDPOINTS, PING_EVENT } from '../../shared/webhooks/endpoints.js';
import { WEBHOOK_DELIVERIES_CHANNEL } from './webhooks.js';

export type { WebhookEndpoint } from '../webhook-endpoint-schema.js';

interface EndpointFields {
  url: string;
  description: string | null;
  eventTypes: string[];
  enabled: boolean;
}

/** What the audit log keeps of an endpoint: the URL's origin only (a path may carry a token). */
const auditView = (e: Pick<WebhookEndpoint, 'url' | 'event_types' | 'enabled'>) => ({
  url: new URL(e.url).origin,
  event_types: e.event_types,
  enabled: e.enabled,
});

const newSecret = (key: Buffer, workspaceId: string) => {
  const id = newId('whs');
  const secret = generateWebhookSecret();
  return { id, secret, encrypted: encryptSecret(key, secret, id, workspaceId) };
};

export class TooManyEndpointsError extends Error {}

/** A new endpoint and its first secret, returned in clear: the only time. */
export async function createEndpoint(
  db: Database,
  input: EndpointFields & { workspaceId: string; actor: AuditActor; key: Buffer },
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  return db.transaction().execute(async (tx) => {
    // Creates of one workspace one at a time, so the count below holds.
    await sql`select pg_advisory_xact_lock(hashtext(${`webhook_endpoints/${input.workspaceId}`}))`.execute(tx);
    const { n } = await tx
      .selectFrom('webhook_endpoints')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('workspace_id', '=', input.workspaceId)
      .executeTakeFirstOrThrow();
    if (n >= MAX_WEBHOOK_ENDPOINTS) throw new TooManyEndpointsError(`a workspace has at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints`);
    const s = newSecret(input.key, input.workspaceId);
    const endpoint = await tx
      .insertInto('webhook_endpoints')
      .values({
        id: newId('wep'),
        workspace_id: input.workspaceId,
        url: input.url,
        description: input.description,
        event_types: input.eventTypes,
        enabled: input.enabled,
        secret_id: s.id,
        secret_encrypted: s.encrypted,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAuditEvent(tx, {
      workspaceId: input.workspaceId,
      action: 'webhook_endpoint.created',
      actor: input.actor,
      targetType: 'webhook_endpoint',
      targetId: endpoint.id,
      details: { ...auditView(endpoint), secret_id: s.id },
    });
    return { endpoint, secret: s.secret };
  });
}

export async function listEndpoints(db: Queryable, workspaceId: string): Promise<WebhookEndpoint[]> {
  return db.selectFrom('webhook_endpoints').selectAll().where('workspace_id', '=', workspaceId).orderBy('created_at').orderBy('id').execute();
}

export async function getEndpoint(db: Queryable, workspaceId: string, id: string): Promise<WebhookEndpoint | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
}

/** Changes the fields given; undefined when the workspace has no such endpoint. */
export async function updateEndpoint(
  db: Database,
  workspaceId: string,
  id: string,
  patch: Partial<EndpointFields>,
  actor: AuditActor,
): Promise<WebhookEndpoint | undefined> {
  return db.transaction().execute(async (tx) => {
    const old = await tx
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .forUpdate()
      .executeTakeFirst();
    if (!old) return undefined;
    const current = await tx
      .updateTable('webhook_endpoints')
      .set({
        ...(patch.url !== undefined ? { url: patch.url } : {}),
        ...(patch.description !== undefined ? { description: patch.description } : {}),
        ...(patch.eventTypes !== undefined ? { event_types: patch.eventTypes } : {}),
        ...(patch.enabled !== undefined ? { enabled: patch.enabled } : {}),
        updated_at: sql`now()`,
      })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAuditEvent(tx, {
      workspaceId,
      action: 'webhook_endpoint.updated',
      actor,
      targetType: 'webhook_endpoint',
      targetId: id,
      details: { old: auditView(old), new: auditView(current) },
    });
    return current;
  });
}

/** Removes the endpoint (its deliveries stay, naming it; those not sent yet are superseded). */
export async function deleteEndpoint(db: Database, workspaceId: string, id: string, actor: AuditActor): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const gone = await tx.deleteFrom('webhook_endpoints').where('workspace_id', '=', workspaceId).where('id', '=', id).returningAll().executeTakeFirst();
    if (!gone) return false;
    await recordAuditEvent(tx, {
      workspaceId,
      action: 'webhook_endpoint.deleted',
      actor,
      targetType: 'webhook_endpoint',
      targetId: id,
      details: auditView(gone),
    });
    return true;
  });
}

/**
 * A new secret for the endpoint; the one it replaces keeps signing for `overlapSeconds` (0: stops
 * now). A secret still in an earlier rotation's overlap stops now: at most two sign at once.
 */
export async function rotateEndpointSecret(
  db: Database,
  input: { workspaceId: string; id: string; overlapSeconds: number; actor: AuditActor; key: Buffer },
): Promise<{ endpoint: WebhookEndpoint; secret: string } | undefined> {
  return db.transaction().execute(async (tx) => {
    const old = await tx
      .selectFrom('webhook_endpoints')
      .select(['secret_id', 'secret_encrypted'])
      .where('workspace_id', '=', input.workspaceId)
      .where('id', '=', input.id)
      .forUpdate()
      .executeTakeFirst();
    if (!old) return undefined;
    const s = newSecret(input.key, input.workspaceId);
    const overlap = input.overlapSeconds > 0;
    const endpoint = await tx
      .updateTable('webhook_endpoints')
      .set({
        secret_id: s.id,
        secret_encrypted: s.encrypted,
        previous_secret_id: overlap ? old.secret_id : null,
        previous_secret_encrypted: overlap ? old.secret_encrypted : null,
        previous_expires_at: overlap ? sql<Date>`now() + make_interval(secs => ${input.overlapSeconds})` : null,
        updated_at: sql`now()`,
      })
      .where('id', '=', input.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAuditEvent(tx, {
      workspaceId: input.workspaceId,
      action: 'webhook_endpoint.secret_rotated',
      actor: input.actor,
      targetType: 'webhook_endpoint',
      targetId: input.id,
      details: { secret_id: s.id, overlap_seconds: input.overlapSeconds, previous_signs_until: endpoint.previous_expires_at?.toISOString() ?? null },
    });
    return { endpoint, secret: s.secret };
  });
}

/**
 * What a delivery to the endpoint is signed with now: its secret and, during an overlap, the
 * replaced one (newest first), skipping any that cannot be decrypted; `state` says when the
 * endpoint is gone or disabled (its pending deliveries are not sent).
 */
export async function endpointSigningSecrets(
  db: Queryable,
  endpointId: string,
  key: Buffer | readonly Buffer[],
): Promise<{ state: 'enabled' | 'disabled' | 'gone'; secrets: string[]; undecryptable: string[] }> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select([
      'workspace_id',
      'enabled',
      'secret_id',
      'secret_encrypted',
      'previous_secret_id',
      'previous_secret_encrypted',
      sql<boolean>`coalesce(previous_expires_at > now(), false)`.as('previous_signs'),
    ])
    .where('id', '=', endpointId)
    .executeTakeFirst();
  if (!row) return { state: 'gone', secrets: [], undecryptable: [] };
  const stored: Array<[string, string]> = [[row.secret_id, row.secret_encrypted]];
  if (row.previous_signs && row.previous_secret_id && row.previous_secret_encrypted) stored.push([row.previous_secret_id, row.previous_secret_encrypted]);
  const secrets: string[] = [];
  const undecryptable: string[] = [];
  for (const [id, enc] of stored) {
    try {
      secrets.push(decryptSecret(key, enc, id, row.workspace_id));
    } catch {
      undecryptable.push(id);
    }
  }
  return { state: row.enabled ? 'enabled' : 'disabled', secrets, undecryptable };
}

/**
 * One delivery of the event to every enabled endpoint of the workspace that subscribes to it, in
 * the caller's transaction (the SQL function of 0110_webhook_endpoints); returns how many.
 */
export async function fanOutToEndpoints(
  tx: Queryable,
  e: { workspaceId: string; type: string; eventId: string; jobId: string | null; data: unknown },
): Promise<number> {
  const r = await sql<{
    n: number;
  }>`select webhook_endpoint_fanout(${e.workspaceId}, ${e.type}, ${e.eventId}, ${e.jobId}, ${JSON.stringify(e.data)}::jsonb) as n`.execute(tx);
  return r.rows[0]!.n;
}

/** A `webhook.ping` for the endpoint alone, through the outbox like any event; its delivery id. */
export async function enqueuePing(db: Database, endpoint: WebhookEndpoint): Promise<{ deliveryId: string; eventId: string }> {
  const eventId = `whk_ping_${newId('evt').slice(4)}`;
  const deliveryId = `${eventId}_${endpoint.id}`;
  const data = { endpoint_id: endpoint.id, sent_at: new Date().toISOString() };
  await db.transaction().execute(async (tx) => {
    await tx
      .insertInto('webhook_deliveries')
      .values({
        id: deliveryId,
        event_id: eventId,
        endpoint_id: endpoint.id,
        job_id: null,
        workspace_id: endpoint.workspace_id,
        type: PING_EVENT,
        url: endpoint.url,
        job: JSON.stringify(data),
      })
      .execute();
    await sql`select pg_notify(${WEBHOOK_DELIVERIES_CHANNEL}, ${deliveryId})`.execute(tx);
  });
  return { deliveryId, eventId };
}
