// The gateway's connection LISTENing for API key revocations and creations (api/pg-listener.ts), which
// keeps the key cache and the set of live key ids of api/auth.ts true: revokeApiKey and createApiKey
// notify on these channels in their own transactions.
import type { Logger } from 'pino';
import { createPgListener, type PgListener } from '../shared/pg-listener.js';

export const REVOCATION_CHANNEL = 'api_key_revoked';
export const CREATION_CHANNEL = 'api_key_created';
/** The application_name of the key listener's connection (found in pg_stat_activity). */
export const KEY_LISTENER_NAME = 'gateway-api-keys';
/** Past this many live keys the in-memory id set is not kept (every unknown id then costs a query). */
export const KNOWN_IDS_MAX = 200_000;

interface KeyListener extends PgListener {
  /** Changes on every notification and every (re)connect, to detect races with a lookup. */
  generation(): number;
}

/**
 * The connection LISTENing for key revocations and creations (api/pg-listener.ts). After LISTEN it
 * loads the live key ids; notifications that arrive during that read are applied after it, in
 * order, so the set misses no change.
 */
export function createKeyListener(
  databaseUrl: string,
  logger: Logger | undefined,
  handlers: { onRevoked(keyId: string): void; onCreated(keyId: string): void; onLoaded(ids: string[] | null): void; onStateChange(): void },
): KeyListener {
  let generation = 0;
  const listener = createPgListener<string[] | null>({
    databaseUrl,
    channels: [REVOCATION_CHANNEL, CREATION_CHANNEL],
    applicationName: KEY_LISTENER_NAME,
    logger,
    what: 'api key listener (key cache bypassed meanwhile)',
    onNotification(channel, keyId) {
      generation++;
      if (channel === REVOCATION_CHANNEL) handlers.onRevoked(keyId);
      else handlers.onCreated(keyId);
    },
    async load(c) {
      const live = await c.query<{ id: string }>('select id from api_keys where revoked_at is null limit $1', [KNOWN_IDS_MAX + 1]);
      return live.rows.length > KNOWN_IDS_MAX ? null : live.rows.map((r) => r.id);
    },
    onConnected(ids) {
      generation++;
      handlers.onStateChange();
      handlers.onLoaded(ids ?? null);
    },
    // Anything learned while connected may be stale now.
    onLost() {
      generation++;
      handlers.onStateChange();
    },
  });
  return { ...listener, generation: () => generation };
}
