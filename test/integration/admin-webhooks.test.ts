// `webhook secret rotate` of the admin CLI, run as a process against a real database: owners only,
// the secret printed once and stored only encrypted, the previous secret kept for the grace period;
// and the rotation of WEBHOOK_SECRETS_KEY itself (`webhook secrets rekey`).
import { createEndpoint, endpointSigningSecrets, rotateEndpointSecret } from '../../db/repos/webhook-endpoints.js';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTenant, createTestDatabase, type Tenant, type TestDatabase } from '../support/stack.js';
import { addMember } from '../../db/repos/workspaces.js';
import { activeWebhookSecrets } from '../../db/repos/webhooks.js';
import { secretsDecryptionKeys, secretsEncryptionKey } from '../../shared/webhooks/signing.js';

const adminJs = fileURLToPath(new URL('../../admin/main.js', import.meta.url));
let tdb: TestDatabase;
let t: Tenant;
let env: NodeJS.ProcessEnv;

const admin = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    execFile(process.execPath, [adminJs, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });

before(async () => {
  tdb = await createTestDatabase();
  t = await createTenant(tdb.db);
  await addMember(tdb.db, t.workspaceId, 'member@example.test', 'member');
  env = { ...process.env, DATABASE_URL: tdb.url, WEBHOOK_SECRETS_KEY: 'an operator key for the test' };
});

after(async () => {
  await tdb?.drop();
});

test('an owner rotates: printed once, stored encrypted, the previous one signs for the grace period', async () => {
  const first = await admin('webhook', 'secret', 'rotate', '--workspace', t.workspaceId, '--as', t.ownerEmail);
  assert.equal(first.code, 0, first.stderr);
  const secret1 = first.stdout.match(/whsec_[A-Za-z0-9+/=]+/)?.[0];
  assert.ok(secret1, first.stdout);
  assert.match(first.stdout, /no previous secret/);
  const rows = await tdb.db.selectFrom('webhook_secrets').selectAll().where('workspace_id', '=', t.workspaceId).execute();
  assert.equal(rows.length, 1);
  assert.ok(!JSON.stringify(rows).includes(secret1.slice(6)), 'never stored in clear');

  const second = await admin('webhook', 'secret', 'rotate', '--workspace', t.workspaceId, '--as', t.ownerEmail, '--grace-hours', '2', '--json');
  assert.equal(second.code, 0, second.stderr);
  const out = JSON.parse(second.stdout);
  assert.match(out.secret, /^whsec_/);
  const until = Date.parse(out.previous_secret_signs_until);
  assert.ok(Math.abs(until - (Date.now() + 2 * 3600_000)) < 60_000, 'the previous secret expires after the grace period');
  const key = secretsEncryptionKey(env);
  assert.deepEqual(await activeWebhookSecrets(tdb.db, t.workspaceId, key), [out.secret, secret1], 'both sign, newest first');
  // The workers need the same key material: another key decrypts nothing.
  await assert.rejects(activeWebhookSecrets(tdb.db, t.workspaceId, secretsEncryptionKey({ WEBHOOK_SECRETS_KEY: 'another key' })), /cannot be decrypted/);

  const third = await admin('webhook', 'secret', 'rotate', '--workspace', t.workspaceId, '--as', t.ownerEmail, '--grace-hours', '0', '--json');
  assert.equal(third.code, 0, third.stderr);
  assert.deepEqual(await activeWebhookSecrets(tdb.db, t.workspaceId, key), [JSON.parse(third.stdout).secret], 'no grace: only the new one signs');
});

test('members, unknown workspaces and bad flags are refused with their exit codes', async () => {
  const member = await admin('webhook', 'secret', 'rotate', '--workspace', t.workspaceId, '--as', 'member@example.test');
  assert.equal(member.code, 4, member.stderr);
  const unknown = await admin('webhook', 'secret', 'rotate', '--workspace', 'ws_nope', '--as', t.ownerEmail);
  assert.equal(unknown.code, 3, unknown.stderr);
  const badGrace = await admin('webhook', 'secret', 'rotate', '--workspace', t.workspaceId, '--as', t.ownerEmail, '--grace-hours', '-1');
  assert.equal(badGrace.code, 2, badGrace.stderr);
  const missing = await admin('webhook', 'secret', 'rotate', '--workspace', t.workspaceId);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--as/);
  const help = await admin('help');
  assert.match(help.stdout, /webhook secret rotate --workspace W --as EMAIL/);
});

test('WEBHOOK_SECRETS_KEY rotates: with the old key as previous every secret still opens, rekey stores them under the new one, then the old key can go', async () => {
  const w = await createTenant(tdb.db);
  const newKey = 'the new operator key for rotation';
  const created = await admin('webhook', 'secret', 'rotate', '--workspace', w.workspaceId, '--as', w.ownerEmail, '--json', '--grace-hours', '0');
  // Written with the suite's key: it plays the old key here.
  assert.equal(created.code, 0, created.stderr);
  const secret = JSON.parse(created.stdout).secret as string;
  const suiteKey = env.WEBHOOK_SECRETS_KEY!;
  // An endpoint's secrets too (0110_webhook_endpoints): its current one and one in a rotation's overlap.
  const oldKey = secretsEncryptionKey({ WEBHOOK_SECRETS_KEY: suiteKey });
  const ep = await createEndpoint(tdb.db, {
    workspaceId: w.workspaceId,
    url: 'https://hooks.example.com/x',
    description: null,
    eventTypes: ['job.*'],
    enabled: true,
    actor: 'system:test',
    key: oldKey,
  });
  const epRotated = await rotateEndpointSecret(tdb.db, {
    workspaceId: w.workspaceId,
    id: ep.endpoint.id,
    overlapSeconds: 3600,
    actor: 'system:test',
    key: oldKey,
  });
  const endpointSecrets = [epRotated!.secret, ep.secret];
  const during = secretsDecryptionKeys({ WEBHOOK_SECRETS_KEY: newKey, WEBHOOK_SECRETS_KEY_PREVIOUS: suiteKey });
  assert.deepEqual((await endpointSigningSecrets(tdb.db, ep.endpoint.id, during)).secrets, endpointSecrets);
  assert.deepEqual(await activeWebhookSecrets(tdb.db, w.workspaceId, during), [secret], 'the previous key still opens it: deliveries go on');
  await assert.rejects(activeWebhookSecrets(tdb.db, w.workspaceId, secretsEncryptionKey({ WEBHOOK_SECRETS_KEY: newKey })), /cannot be decrypted/);

  const rekey = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [adminJs, 'webhook', 'secrets', 'rekey', '--json'],
      { env: { ...env, WEBHOOK_SECRETS_KEY: newKey, WEBHOOK_SECRETS_KEY_PREVIOUS: suiteKey }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }),
    );
  });
  assert.equal(rekey.code, 0, rekey.stderr);
  const r = JSON.parse(rekey.stdout) as { rekeyed: number; already_current: number; unreadable: string[] };
  assert.ok(r.rekeyed >= 1, rekey.stdout);
  assert.deepEqual(r.unreadable, []);
  assert.ok(!rekey.stdout.includes(secret), 'no secret printed');
  // Now the new key alone opens it, and the old one no longer does.
  assert.deepEqual(await activeWebhookSecrets(tdb.db, w.workspaceId, secretsEncryptionKey({ WEBHOOK_SECRETS_KEY: newKey })), [secret]);
  await assert.rejects(activeWebhookSecrets(tdb.db, w.workspaceId, secretsEncryptionKey({ WEBHOOK_SECRETS_KEY: suiteKey })), /cannot be decrypted/);
  const endpointAfter = await endpointSigningSecrets(tdb.db, ep.endpoint.id, secretsEncryptionKey({ WEBHOOK_SECRETS_KEY: newKey }));
  assert.deepEqual(endpointAfter, { state: 'enabled', secrets: endpointSecrets, undecryptable: [] }, "the endpoint's secrets open with the new key alone");
  assert.deepEqual((await endpointSigningSecrets(tdb.db, ep.endpoint.id, oldKey)).secrets, [], 'and no longer with the old one');
});
