// Rotation of WEBHOOK_SECRETS_KEY, the key webhook signing secrets are stored under: the rows are
// written again under the current key, opened with whichever configured key does.
import type { Database } from '../index.js';
import { encryptSecret, openSecret } from '../../shared/webhooks/signing.js';

/**
 * Writes every stored webhook secret (the workspaces' and the endpoints') again under keys[0] (the current WEBHOOK_SECRETS_KEY), opening
 * it with whichever of `keys` does: after a key rotation, once this has run the previous key can be
 * dropped. Rows no key opens are counted and left as they are (never deleted).
 */
export async function rekeyWebhookSecrets(db: Database, keys: readonly Buffer[]): Promise<{ rekeyed: number; current: number; unreadable: string[] }> {
  return db.transaction().execute(async (tx) => {
    const rows = await tx.selectFrom('webhook_secrets').select(['id', 'workspace_id', 'secret_encrypted']).forUpdate().execute();
    let rekeyed = 0;
    let current = 0;
    const unreadable: string[] = [];
    for (const r of rows) {
      let opened: { secret: string; keyIndex: number };
      try {
        opened = openSecret(keys, r.secret_encrypted, r.id, r.workspace_id);
      } catch {
        unreadable.push(r.id);
        continue;
      }
      if (opened.keyIndex === 0) {
        current++;
        continue;
      }
      await tx
        .updateTable('webhook_secrets')
        .set({ secret_encrypted: encryptSecret(keys[0]!, opened.secret, r.id, r.workspace_id) })
        .where('id', '=', r.id)
        .execute();
      rekeyed++;
    }
    // The endpoints' secrets (0110_webhook_endpoints): the current one and one still in its overlap.
    const endpoints = await tx
      .selectFrom('webhook_endpoints')
      .select(['id', 'workspace_id', 'secret_id', 'secret_encrypted', 'previous_secret_id', 'previous_secret_encrypted'])
      .forUpdate()
      .execute();
    for (const e of endpoints) {
      const slots = [
        { id: e.secret_id, stored: e.secret_encrypted, column: 'secret_encrypted' as const },
        ...(e.previous_secret_id && e.previous_secret_encrypted
          ? [{ id: e.previous_secret_id, stored: e.previous_secret_encrypted, column: 'previous_secret_encrypted' as const }]
          : []),
      ];
      for (const slot of slots) {
        let opened: { secret: string; keyIndex: number };
        try {
          opened = openSecret(keys, slot.stored, slot.id, e.workspace_id);
        } catch {
          unreadable.push(slot.id);
          continue;
        }
        if (opened.keyIndex === 0) {
          current++;
          continue;
        }
        await tx
          .updateTable('webhook_endpoints')
          .set({ [slot.column]: encryptSecret(keys[0]!, opened.secret, slot.id, e.workspace_id) })
          .where('id', '=', e.id)
          .execute();
        rekeyed++;
      }
    }
    return { rekeyed, current, unreadable };
  });
}
