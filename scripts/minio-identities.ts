// Per-fleet MinIO identities through MinIO's admin API (the API `mc admin` speaks), with no
// extra tool: a canned policy per identity (shared/storage-policies.ts), a user per identity, the
// policy attached. Run by the owner of the MinIO root credentials (scripts/stack-prod.sh):
//
//   S3_ENDPOINT=… S3_ACCESS_KEY=<root> S3_SECRET_KEY=<root> S3_BUCKET=media \
//     node dist/scripts/minio-identities.js <dir>
//
// makes (or updates) mediagen-gateway, mediagen-worker and mediagen-reconciler, each secret kept in
// <dir>/<identity>.secret (made once, mode 0600). Idempotent. With `--secrets-from-env` instead of a
// directory, the secrets are the operator's, from MEDIAGEN_S3_GATEWAY_SECRET_KEY,
// MEDIAGEN_S3_WORKER_SECRET_KEY and MEDIAGEN_S3_RECONCILER_SECRET_KEY (docker-compose.yml's
// minio-identities step, whose services read the same variables): nothing is written.
//
// The admin API signs requests like S3 (SigV4, service `s3`) and takes a new user's secret only
// encrypted with the caller's secret key (madmin-go EncryptData): salt(32) ‖ algorithm id ‖
// nonce(8) ‖ a sio-go stream. We use the PBKDF2-SHA256 + AES-256-GCM variant (id 2, 8192 rounds),
// which every MinIO server accepts (madmin-go DecryptData); a body under 16 KiB is one final
// fragment sealed with nonce ‖ LE32(1) and associated data 0x80 ‖ tag(nonce ‖ LE32(0), empty).
import { createCipheriv, createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { storageIdentities, storagePolicy, type StorageIdentity } from '../shared/storage-policies.js';

export interface AdminCredentials {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  region?: string;
}

/** madmin-go's EncryptData (PBKDF2 + AES-256-GCM) for a payload of less than one 16 KiB fragment. */
function encryptAdminPayload(password: string, data: Buffer): Buffer {
  if (data.length >= 16384) throw new Error('admin payload too large for one fragment');
  const salt = randomBytes(32);
  const key = pbkdf2Sync(Buffer.from(password), salt, 8192, 32, 'sha256');
  const nonce = randomBytes(8);
  const seq = (n: number) => {
    const iv = Buffer.alloc(12);
    nonce.copy(iv);
    iv.writeUInt32LE(n, 8);
    return iv;
  };
  const first = createCipheriv('aes-256-gcm', key, seq(0));
  first.final();
  const ad = Buffer.concat([Buffer.from([0x80]), first.getAuthTag()]);
  const last = createCipheriv('aes-256-gcm', key, seq(1));
  last.setAAD(ad);
  const sealed = Buffer.concat([last.update(data), last.final(), last.getAuthTag()]);
  return Buffer.concat([salt, Buffer.from([0x02]), nonce, sealed]);
}

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const hmac = (k: Buffer | string, s: string) => createHmac('sha256', k).update(s).digest();

/** A SigV4-signed admin call (service s3); throws with MinIO's answer on a non-2xx status. */
async function adminCall(c: AdminCredentials, method: string, path: string, query: Record<string, string>, body: Buffer): Promise<string> {
  const url = new URL(`/minio/admin/v3/${path}`, c.endpoint);
  const params = Object.entries(query).sort(([a], [b]) => (a < b ? -1 : 1));
  for (const [k, v] of params) url.searchParams.set(k, v);
  const enc = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);
  const canonicalQuery = params.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&');
  const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
  const day = amzDate.slice(0, 8);
  const region = c.region ?? 'us-east-1';
  const payloadHash = sha256(body);
  const headers: Record<string, string> = { host: url.host, 'x-amz-content-sha256': payloadHash, 'x-amz-date': amzDate };
  const signed = Object.keys(headers).sort();
  const canonical = [method, url.pathname, canonicalQuery, ...signed.map((h) => `${h}:${headers[h]}`), '', signed.join(';'), payloadHash].join('\n');
  const scope = `${day}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${c.secretKey}`, day), region), 's3'), 'aws4_request');
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  const res = await fetch(url, {
    method,
    headers: {
      ...headers,
      authorization: `AWS4-HMAC-SHA256 Credential=${c.accessKey}/${scope}, SignedHeaders=${signed.join(';')}, Signature=${signature}`,
    },
    body: method === 'GET' ? undefined : new Uint8Array(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`MinIO admin ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return text;
}

/** Makes or updates a user with `secret` and exactly the canned policy `policyName` (made from `policy`). */
async function ensureMinioUser(c: AdminCredentials, user: string, secret: string, policyName: string, policy: object): Promise<void> {
  await adminCall(c, 'PUT', 'add-canned-policy', { name: policyName }, Buffer.from(JSON.stringify(policy)));
  const body = encryptAdminPayload(c.secretKey, Buffer.from(JSON.stringify({ secretKey: secret, status: 'enabled' })));
  await adminCall(c, 'PUT', 'add-user', { accessKey: user }, body);
  await adminCall(c, 'PUT', 'set-user-or-group-policy', { policyName, userOrGroup: user, isGroup: 'false' }, Buffer.alloc(0));
}

/** Removes a user and its canned policy (an identity retired, a test's cleanup); a missing one is no error. */
export async function removeMinioUser(c: AdminCredentials, user: string, policyName: string): Promise<void> {
  await adminCall(c, 'DELETE', 'remove-user', { accessKey: user }, Buffer.alloc(0)).catch(() => undefined);
  await adminCall(c, 'DELETE', 'remove-canned-policy', { name: policyName }, Buffer.alloc(0)).catch(() => undefined);
}

export function identityUser(identity: StorageIdentity, prefix = 'mediagen'): string {
  return `${prefix}-${identity}`;
}

export function identityPolicyName(identity: StorageIdentity, bucket: string, prefix = 'mediagen'): string {
  return `${prefix}-${identity}-${bucket}`;
}

/** The variable `--secrets-from-env` reads an identity's secret from. */
export const secretVariable = (identity: StorageIdentity) => `MEDIAGEN_S3_${identity.toUpperCase()}_SECRET_KEY`;

/** The secrets of `--secrets-from-env`: each required, and at least as long as MinIO accepts (8). */
export function secretsFromEnv(env: NodeJS.ProcessEnv): Record<StorageIdentity, string> {
  const out = {} as Record<StorageIdentity, string>;
  for (const identity of storageIdentities) {
    const v = env[secretVariable(identity)];
    if (!v || v.length < 8) throw new Error(`${secretVariable(identity)}: required, at least 8 characters`);
    out[identity] = v;
  }
  return out;
}

/** A secret kept in `dir`: read, or made once (mode 0600). */
function secretInDir(dir: string, identity: StorageIdentity): string {
  const file = join(dir, `${identity}.secret`);
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    const secret = randomBytes(20).toString('hex');
    writeFileSync(file, `${secret}\n`, { mode: 0o600 });
    return secret;
  }
}

/** Every fleet identity for `bucket`; secrets read from (or made once in) `secrets` when a directory, else those given. */
export async function ensureFleetIdentities(
  c: AdminCredentials,
  bucket: string,
  secrets: string | Record<StorageIdentity, string>,
  prefix = 'mediagen',
): Promise<Record<StorageIdentity, string>> {
  if (typeof secrets === 'string') mkdirSync(secrets, { recursive: true, mode: 0o700 });
  const users = {} as Record<StorageIdentity, string>;
  for (const identity of storageIdentities) {
    const secret = typeof secrets === 'string' ? secretInDir(secrets, identity) : secrets[identity];
    const user = identityUser(identity, prefix);
    await ensureMinioUser(c, user, secret, identityPolicyName(identity, bucket, prefix), storagePolicy(identity, bucket));
    users[identity] = user;
  }
  return users;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dir = process.argv[2];
  const { S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_BUCKET, S3_REGION } = process.env;
  if (!dir || !S3_ENDPOINT || !S3_ACCESS_KEY || !S3_SECRET_KEY || !S3_BUCKET) {
    process.stderr.write('usage: S3_ENDPOINT=… S3_ACCESS_KEY=… S3_SECRET_KEY=… S3_BUCKET=… minio-identities.js <secrets dir> | --secrets-from-env\n');
    process.exit(2);
  }
  Promise.resolve()
    .then(() =>
      ensureFleetIdentities(
        { endpoint: S3_ENDPOINT, accessKey: S3_ACCESS_KEY, secretKey: S3_SECRET_KEY, ...(S3_REGION ? { region: S3_REGION } : {}) },
        S3_BUCKET,
        dir === '--secrets-from-env' ? secretsFromEnv(process.env) : dir,
      ),
    )
    .then(
      (users) => process.stdout.write(`${Object.values(users).join('\n')}\n`),
      (err: unknown) => {
        process.stderr.write(`${(err as Error).message}\n`);
        process.exit(1);
      },
    );
}
