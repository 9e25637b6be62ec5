// Per-fleet storage identities (shared/storage-policies.ts) on a real MinIO: the test stack's
// server, with users and canned policies this suite makes through MinIO's admin API exactly as the
// prod profile does (scripts/minio-identities.ts), on a bucket of its own (lifecycle rules are
// per bucket). The gateway's identity is refused the bucket lifecycle (AccessDenied) and any
// write outside the upload paths; the worker's is refused the lifecycle too; the reconciler's
// applies it. Secrets given by the operator (docker-compose.yml's `--secrets-from-env`) replace
// those a user had.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client as MinioClient } from 'minio';
import { rawMinioClient, requireStackEnv, testConfig } from '../support/stack.js';
import { createStorage, type Storage } from '../../shared/storage.js';
import { readLifecycleRules, ABORT_MULTIPART_RULE_ID, OUTPUT_EXPIRY_RULE_ID } from '../../shared/retention.js';
import { storageIdentities, type StorageIdentity } from '../../shared/storage-policies.js';
import {
  ensureFleetIdentities,
  identityPolicyName,
  removeMinioUser,
  secretsFromEnv,
  secretVariable,
  type AdminCredentials,
} from '../../scripts/minio-identities.js';
import { randomToken } from '../../shared/ids.js';

const tag = randomToken(8)
  .toLowerCase()
  .replace(/[^a-z0-9]/g, 'x');
const bucket = `fleet-${tag}`;
const prefix = `mgt-${tag}`;
let dir: string;
let root: MinioClient;
let admin: AdminCredentials;
const stores = {} as Record<StorageIdentity, Storage>;
const clients = {} as Record<StorageIdentity, MinioClient>;

function configFor(identity: StorageIdentity) {
  return testConfig(process.env.DATABASE_URL!, {
    S3_BUCKET: bucket,
    S3_ACCESS_KEY: `${prefix}-${identity}`,
    S3_SECRET_KEY: readFileSync(join(dir, `${identity}.secret`), 'utf8').trim(),
    S3_MEDIA_PREFIX_SECRET: 'one-secret-for-every-fleet',
  });
}

before(async () => {
  requireStackEnv();
  const base = testConfig(process.env.DATABASE_URL!);
  root = rawMinioClient(base);
  await root.makeBucket(bucket);
  admin = { endpoint: base.S3_ENDPOINT, accessKey: base.S3_ACCESS_KEY!, secretKey: base.S3_SECRET_KEY! };
  dir = mkdtempSync(join(tmpdir(), 'fleet-identities-'));
  await ensureFleetIdentities(admin, bucket, dir, prefix);
  for (const identity of storageIdentities) {
    stores[identity] = createStorage(configFor(identity));
    clients[identity] = rawMinioClient(configFor(identity));
  }
});

after(async () => {
  if (root) {
    const names: string[] = [];
    for await (const o of root.listObjectsV2(bucket, '', true)) if (o.name) names.push(o.name);
    if (names.length) await root.removeObjects(bucket, names);
    await root.removeBucket(bucket).catch(() => undefined);
  }
  for (const identity of storageIdentities) await removeMinioUser(admin, `${prefix}-${identity}`, identityPolicyName(identity, bucket, prefix));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const denied = (err: unknown) => (err as { code?: string }).code === 'AccessDenied';

describe('per-fleet storage identities', () => {
  test('the gateway identity cannot set the bucket lifecycle; the reconciler identity can', async () => {
    await assert.rejects(stores.gateway.applyLifecycle(30), denied);
    await assert.rejects(
      clients.gateway.setBucketLifecycle(bucket, { Rule: [{ ID: 'x', Status: 'Enabled', Filter: { Prefix: '' }, Expiration: { Days: 1 } }] }),
      denied,
    );
    await assert.rejects(stores.worker.applyLifecycle(30), denied);
    const applied = await stores.reconciler.applyLifecycle(30);
    assert.equal(applied.changed, true);
    // MinIO takes no abort-multipart rule (shared/retention.ts): the expiry rule is what it holds.
    const ids = (await readLifecycleRules(root, bucket)).map((r) => r.ID).sort();
    assert.deepEqual(ids, applied.abortRule ? [ABORT_MULTIPART_RULE_ID, OUTPUT_EXPIRY_RULE_ID].sort() : [OUTPUT_EXPIRY_RULE_ID]);
  });

  test('the gateway writes only upload paths, reads what it serves, and presigns an upload', async () => {
    const gw = stores.gateway;
    await gw.ping();
    await gw.putStream('uploads/ws/up1/a.txt', Buffer.from('upload'), 'text/plain');
    await gw.putStream('incoming/ws/up2/b.txt', Buffer.from('incoming'), 'text/plain');
    await gw.copy('incoming/ws/up2/b.txt', 'uploads/ws/up2/b.txt');
    await assert.rejects(gw.putStream('jobs/j1/t/output-1.png', Buffer.from('forged'), 'image/png'), denied);
    await assert.rejects(gw.putStream('elsewhere/x', Buffer.from('x'), 'text/plain'), denied);
    await stores.worker.putStream('jobs/j1/t/output-1.png', Buffer.from('made by a worker'), 'image/png');
    const body = await gw.getStream('jobs/j1/t/output-1.png');
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(c as Buffer);
    assert.equal(Buffer.concat(chunks).toString(), 'made by a worker');
    const url = await gw.url('jobs/j1/t/output-1.png', 60);
    assert.equal((await fetch(url)).status, 200, 'a presigned GET signed by the gateway');
    const post = await gw.presignedPost('incoming/ws/up3/c.txt', { contentType: 'text/plain', size: 3, expirySeconds: 60 });
    const form = new FormData();
    for (const [k, v] of Object.entries(post.fields)) form.append(k, v);
    form.append('file', new Blob(['abc'], { type: 'text/plain' }));
    const sent = await fetch(post.url, { method: 'POST', body: form });
    assert.ok(sent.status >= 200 && sent.status < 300, `the presigned POST: HTTP ${sent.status}`);
    await gw.remove('uploads/ws/up1/a.txt');
    await assert.rejects(clients.gateway.setBucketPolicy(bucket, '{}'), denied);
  });

  test("every identity reads the catalog's media and none writes it", async () => {
    await root.putObject(bucket, 'catalog/actors/a1/reference.png', Buffer.from('seeded'));
    for (const identity of storageIdentities) {
      assert.equal((await stores[identity].stat('catalog/actors/a1/reference.png'))?.size, 6, identity);
      await assert.rejects(stores[identity].putStream('catalog/actors/a1/reference.png', Buffer.from('forged'), 'image/png'), denied, identity);
    }
  });

  test('a worker writes job media and uploads but not the incoming paths the gateway presigns', async () => {
    await stores.worker.putStream('uploads/ws/up4/d.txt', Buffer.from('fetched'), 'text/plain');
    await assert.rejects(stores.worker.putStream('incoming/ws/up5/e.txt', Buffer.from('x'), 'text/plain'), denied);
    await stores.reconciler.remove('incoming/ws/up2/b.txt');
  });

  test("the operator's secrets (--secrets-from-env, as compose runs it): each required, and a second run rotates every identity to them", async () => {
    assert.throws(
      () => secretsFromEnv({ [secretVariable('gateway')]: 'gateway-secret-1', [secretVariable('worker')]: 'worker-secret-1' }),
      /MEDIAGEN_S3_RECONCILER_SECRET_KEY: required/,
    );
    assert.throws(
      () =>
        secretsFromEnv({
          MEDIAGEN_S3_GATEWAY_SECRET_KEY: 'short',
          MEDIAGEN_S3_WORKER_SECRET_KEY: 'worker-secret-1',
          MEDIAGEN_S3_RECONCILER_SECRET_KEY: 'reconciler-secret-1',
        }),
      /GATEWAY_SECRET_KEY/,
    );
    const given = secretsFromEnv(Object.fromEntries(storageIdentities.map((i) => [secretVariable(i), `${i}-from-the-operator-${tag}`])));
    await ensureFleetIdentities(admin, bucket, given, prefix);
    for (const identity of storageIdentities) {
      const withGiven = createStorage({ ...configFor(identity), S3_SECRET_KEY: given[identity] });
      assert.equal((await withGiven.stat('catalog/actors/a1/reference.png'))?.size, 6, `${identity} signs with the given secret`);
      await assert.rejects(stores[identity].stat('catalog/actors/a1/reference.png'), `${identity}: the secret it had no longer signs`);
    }
  });
});
