// Standard Webhooks signing (https://www.standardwebhooks.com): every delivery carries
// `webhook-id` (stable per event, the same on every retry), `webhook-timestamp` (unix seconds of
// this attempt) and `webhook-signature`: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, one per
// active secret of the workspace, space-separated (two during a rotation's grace period).
// Secrets look like `whsec_<base64 of 32 random bytes>`.
//
// At rest a secret is encrypted with AES-256-GCM under a key derived (HKDF-SHA256) from
// WEBHOOK_SECRETS_KEY, or from S3_SECRET_KEY when that is unset, with the secret's id and workspace
// as associated data, so a database dump alone (or a row copied to another workspace) signs nothing.
// Pure node:crypto: the worker (signing) and the admin CLI (rotation) import it.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/** A new signing secret, `whsec_<base64>`: shown once, stored only encrypted. */
export function generateWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

function secretBytes(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('not a webhook secret');
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** The three Standard Webhooks headers of one attempt, signed by every secret given. */
export function signWebhook(secrets: readonly string[], id: string, timestampSeconds: number, body: string): SignedHeaders {
  if (secrets.length === 0) throw new Error('no signing secret');
  const signed = `${id}.${timestampSeconds}.${body}`;
  const signatures = secrets.map((s) => `v1,${createHmac('sha256', secretBytes(s)).update(signed).digest('base64')}`);
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': signatures.join(' ') };
}

/** The at-rest encryption key, from the configured key material (never logged). */
export function secretsEncryptionKey(env: { WEBHOOK_SECRETS_KEY?: string | undefined; S3_SECRET_KEY?: string | undefined }): Buffer {
  const material = env.WEBHOOK_SECRETS_KEY ?? env.S3_SECRET_KEY;
  if (!material) throw new Error('WEBHOOK_SECRETS_KEY (or S3_SECRET_KEY) is needed to protect webhook secrets');
  return Buffer.from(hkdfSync('sha256', material, 'mediagen', 'webhook-secrets v1', 32));
}

const aad = (secretId: string, workspaceId: string) => Buffer.from(`${workspaceId}/${secretId}`);

/** `v1.<iv>.<tag>.<ciphertext>` (base64url parts). */
export function encryptSecret(key: Buffer, secret: string, secretId: string, workspaceId: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad(secretId, workspaceId));
  const ct = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), ct].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}

/**
 * The keys that open stored secrets: the current one first, then each previous one
 * (WEBHOOK_SECRETS_KEY_PREVIOUS), so a key rotation never stops a delivery: rows written under the
 * old key open until `webhook secrets rekey` has written them again under the new one.
 */
export function secretsDecryptionKeys(env: {
  WEBHOOK_SECRETS_KEY?: string | undefined;
  WEBHOOK_SECRETS_KEY_PREVIOUS?: string | undefined;
  S3_SECRET_KEY?: string | undefined;
}): Buffer[] {
  const previous = (env.WEBHOOK_SECRETS_KEY_PREVIOUS ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  return [secretsEncryptionKey(env), ...previous.map((material) => secretsEncryptionKey({ WEBHOOK_SECRETS_KEY: material }))];
}

/** Which of `keys` opens the stored secret (its index), and the secret; throws when none does. */
export function openSecret(keys: Buffer | readonly Buffer[], stored: string, secretId: string, workspaceId: string): { secret: string; keyIndex: number } {
  const [version, iv, tag, ct] = stored.split('.');
  if (version !== 'v1' || !iv || !tag || ct === undefined) throw new Error(`webhook secret ${secretId} is not in a known format`);
  const list = Buffer.isBuffer(keys) ? [keys] : keys;
  for (let i = 0; i < list.length; i++) {
    const decipher = createDecipheriv('aes-256-gcm', list[i]!, Buffer.from(iv, 'base64url'));
    decipher.setAAD(aad(secretId, workspaceId));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    try {
      return { secret: Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8'), keyIndex: i };
    } catch {
      // not this key: try the next
    }
  }
  throw new Error(
    `webhook secret ${secretId} cannot be decrypted with the configured keys (WEBHOOK_SECRETS_KEY changed without WEBHOOK_SECRETS_KEY_PREVIOUS?)`,
  );
}

export function decryptSecret(keys: Buffer | readonly Buffer[], stored: string, secretId: string, workspaceId: string): string {
  return openSecret(keys, stored, secretId, workspaceId).secret;
}
