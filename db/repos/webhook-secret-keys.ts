// Rotation of WEBHOOK_SECRETS_KEY, the key webhook signing secrets are stored under: the rows are
// written again under the current key, opened with whichever configured key does.
import type { Database } from '../index.js';
import { encryptSecret, openSecret } from '../../shared/webhook-signing.js';

/**
 * Writes every stored webhook secret again under keys[0] (the current WEBHOOK_SECRETS_KEY), opening
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
    return { rekeyed, current, unreadable };
  });
}
