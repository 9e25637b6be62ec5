// S3 credentials from the AWS chain's web identity link (Kubernetes IRSA): with S3_ACCESS_KEY /
// S3_SECRET_KEY unset, the storage module exchanges the token file's contents at STS (a fake on
// loopback speaking AssumeRoleWithWebIdentity, handing out real temporary credentials of the test
// stack's MinIO) and puts and gets real objects with them; it reuses them until 5 minutes before
// the expiry STS reported, then renews with the token file read again.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'minio';
import { loadConfig } from '../../shared/config.js';
import { createStorage } from '../../shared/storage.js';
import { awsCredentialSource } from '../../shared/aws-credentials.js';
import { startFakeSts, type FakeSts } from '../support/fake-sts.js';
import { requireStackEnv, waitFor } from '../support/stack.js';

const ROLE = 'arn:aws:iam::123456789012:role/mediagen-worker';
const MARGIN_MS = 5 * 60_000; // the renewal margin of shared/aws-credentials.ts for URLs of a minute

let sts: FakeSts;
let dir: string;
let tokenFile: string;

before(async () => {
  requireStackEnv();
  dir = await mkdtemp(join(tmpdir(), 'web-identity-'));
  tokenFile = join(dir, 'token');
  await writeFile(tokenFile, 'token-1\n');
  sts = await startFakeSts({
    acceptedTokens: ['token-1', 'token-2'],
    roleArn: ROLE,
    minio: { endpoint: process.env.S3_ENDPOINT!, accessKey: process.env.S3_ACCESS_KEY!, secretKey: process.env.S3_SECRET_KEY!, region: 'us-east-1' },
    lifetimeMs: 60 * 60_000,
  });
});

after(async () => {
  await sts?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The service's configuration with the storage keys unset and a web identity instead. */
function webIdentityConfig(extra: Record<string, string> = {}) {
  return loadConfig({
    ...process.env,
    NODE_ENV: 'test',
    S3_ACCESS_KEY: '',
    S3_SECRET_KEY: '',
    AWS_ACCESS_KEY_ID: '',
    AWS_SECRET_ACCESS_KEY: '',
    S3_MEDIA_PREFIX_SECRET: 'media-prefix-secret-for-tests',
    AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile,
    AWS_ROLE_ARN: ROLE,
    AWS_ROLE_SESSION_NAME: 'storage-test',
    AWS_ENDPOINT_URL_STS: sts.url,
    // Short-lived URLs: the renewal margin is the SDKs' 5 minutes (longer URLs lengthen it, tested below).
    PRESIGN_EXPIRY_SECONDS: '60',
    ...extra,
  });
}

describe('S3 credentials from a web identity', () => {
  test('objects are put and read with the credentials STS hands out, renewed before they expire with the token file read again', async () => {
    const config = webIdentityConfig();
    assert.equal(config.S3_ACCESS_KEY, undefined);
    assert.equal(awsCredentialSource(config), 'web-identity');
    // Reported expiry 8 s past the renewal margin: the first credentials serve about that long.
    sts.lifetimeMs = MARGIN_MS + 8_000;
    const storage = createStorage(config);
    const key = `aws-chain/${Date.now()}/a.txt`;
    const before = sts.calls.length;
    await storage.putStream(key, Buffer.from('through STS'), 'text/plain');
    const body = await streamText(await storage.getStream(key));
    assert.equal(body, 'through STS');
    assert.equal(sts.calls.length - before, 1, 'one exchange for both requests: the credentials are reused');
    const renewalDue = Date.now() + 8_000;
    assert.deepEqual(sts.calls.at(-1), { token: 'token-1', roleArn: ROLE, sessionName: 'storage-test' });

    // The object really is in the stack's bucket (read with the stack's own keys).
    const direct = new Client({
      ...endpointOf(process.env.S3_ENDPOINT!),
      accessKey: process.env.S3_ACCESS_KEY!,
      secretKey: process.env.S3_SECRET_KEY!,
      region: 'us-east-1',
    });
    assert.equal(await streamText(await direct.getObject(config.S3_BUCKET, key)), 'through STS');

    // The kubelet rotates the token; once the credentials are within the margin, the next request renews with the new one.
    await writeFile(tokenFile, 'token-2\n');
    sts.lifetimeMs = 60 * 60_000;
    await waitFor('the credentials to reach their renewal time', () => Date.now() >= renewalDue || undefined, 15_000);
    assert.equal((await storage.stat(key))?.size, 'through STS'.length);
    assert.equal(sts.calls.length - before, 2, 'renewed once');
    assert.equal(sts.calls.at(-1)!.token, 'token-2', 'the token file is read again at renewal');
    await storage.remove(key);
    assert.equal(sts.calls.length - before, 2, 'the renewed credentials are reused');
  });

  test('credentials are renewed while they still outlive the URLs presigned with them', async () => {
    // 15-minute URLs: credentials with 10 minutes left would sign URLs that die early, so each presign renews.
    const storage = createStorage(webIdentityConfig({ PRESIGN_EXPIRY_SECONDS: '900' }));
    sts.lifetimeMs = 10 * 60_000;
    const first = sts.calls.length;
    const a = new URL(await storage.url('k1'));
    const b = new URL(await storage.url('k2'));
    assert.equal(sts.calls.length - first, 2, 'renewed for each URL');
    assert.ok(a.searchParams.get('X-Amz-Security-Token'), 'signed with the session token');
    assert.notEqual(a.searchParams.get('X-Amz-Credential'), b.searchParams.get('X-Amz-Credential'), 'each with fresh credentials');
    // Credentials with 20 minutes left outlive a 15-minute URL: reused.
    sts.lifetimeMs = 20 * 60_000;
    await storage.url('k3');
    const afterLong = sts.calls.length;
    await storage.url('k4');
    assert.equal(sts.calls.length, afterLong, 'reused while they outlive the URL');
  });

  test('a token STS refuses fails the request with STS error code, and no credential in the message', async () => {
    await writeFile(join(dir, 'bad'), 'not-a-token');
    const storage = createStorage(webIdentityConfig({ AWS_WEB_IDENTITY_TOKEN_FILE: join(dir, 'bad') }));
    await assert.rejects(storage.stat('anything'), (err: Error) => {
      assert.match(err.message, /InvalidIdentityToken/);
      assert.ok(!err.message.includes('not-a-token'), 'the token is not echoed');
      return true;
    });
  });

  test('keys come in pairs, and the AWS chain needs its own media-prefix secret', () => {
    assert.throws(() => loadConfig({ ...process.env, S3_SECRET_KEY: '' }), /S3_ACCESS_KEY \/ S3_SECRET_KEY: set both, or neither/);
    assert.throws(
      () => loadConfig({ ...process.env, S3_ACCESS_KEY: '', S3_SECRET_KEY: '', S3_MEDIA_PREFIX_SECRET: '' }),
      /S3_MEDIA_PREFIX_SECRET: required when the S3 credentials come from the AWS chain/,
    );
  });
});

function endpointOf(url: string) {
  const u = new URL(url);
  return { endPoint: u.hostname, port: Number(u.port), useSSL: u.protocol === 'https:' };
}

async function streamText(s: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c as string));
  return Buffer.concat(chunks).toString('utf8');
}
