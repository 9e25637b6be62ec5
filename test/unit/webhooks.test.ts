// Webhook signing, secrets at rest and target rules, as pure functions: signatures verify with the
// npm `standardwebhooks` package (not our own code) and the client's verifyWebhook; the URL rules
// refuse what upload-from-url refuses, and hostile DNS answers are refused by an injected resolver
// before any connection is made.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook } from '@mediagen/client/webhooks';
import { decryptSecret, encryptSecret, generateWebhookSecret, secretsEncryptionKey, signWebhook } from '../../shared/webhooks/signing.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkWebhookUrl, postWebhook, resolveWebhookTarget } from '../../shared/webhooks/target.js';
import { jobFromSnapshot } from '../../activities/webhooks.js';
import { FetchError } from '../../shared/fetch-remote.js';

const now = () => Math.floor(Date.now() / 1000);

describe('signing', () => {
  const body = JSON.stringify({ type: 'job.completed', data: { id: 'img_1', status: 'completed' } });

  test('a signature verifies with standardwebhooks and with the client, and a tampered body does not', () => {
    const secret = generateWebhookSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
    const headers = signWebhook([secret], 'whk_img_1_3', now(), body);
    assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/);
    assert.deepEqual(new Webhook(secret).verify(body, { ...headers }), JSON.parse(body));
    assert.equal(verifyWebhook(secret, body, { ...headers }).type, 'job.completed');
    const tampered = body.replace('completed"}', 'failed"}');
    assert.throws(() => new Webhook(secret).verify(tampered, { ...headers }));
    assert.throws(() => verifyWebhook(secret, tampered, { ...headers }), /invalid_signature|verification failed/);
    assert.throws(() => new Webhook(generateWebhookSecret()).verify(body, { ...headers }), 'another secret does not verify');
  });

  test('during a rotation both secrets sign, and each verifies alone', () => {
    const [oldSecret, newSecret] = [generateWebhookSecret(), generateWebhookSecret()];
    const headers = signWebhook([newSecret, oldSecret], 'whk_x', now(), body);
    assert.equal(headers['webhook-signature'].split(' ').length, 2);
    for (const s of [oldSecret, newSecret]) assert.doesNotThrow(() => new Webhook(s).verify(body, { ...headers }));
  });

  test('a stale timestamp is refused by the verifier (so every attempt is signed anew)', () => {
    const secret = generateWebhookSecret();
    const headers = signWebhook([secret], 'whk_x', now() - 600, body);
    assert.throws(() => new Webhook(secret).verify(body, { ...headers }));
  });
});

describe('secrets at rest', () => {
  const key = secretsEncryptionKey({ WEBHOOK_SECRETS_KEY: 'k'.repeat(32) });

  test('round trip; stored form does not contain the secret', () => {
    const secret = generateWebhookSecret();
    const stored = encryptSecret(key, secret, 'whs_1', 'ws_1');
    assert.ok(!stored.includes(secret.slice(6, 20)));
    assert.equal(decryptSecret(key, stored, 'whs_1', 'ws_1'), secret);
  });

  test('another key, another workspace or another id cannot decrypt it', () => {
    const stored = encryptSecret(key, generateWebhookSecret(), 'whs_1', 'ws_1');
    const otherKey = secretsEncryptionKey({ WEBHOOK_SECRETS_KEY: 'z'.repeat(32) });
    assert.throws(() => decryptSecret(otherKey, stored, 'whs_1', 'ws_1'), /cannot be decrypted/);
    assert.throws(() => decryptSecret(key, stored, 'whs_1', 'ws_2'), /cannot be decrypted/);
    assert.throws(() => decryptSecret(key, stored, 'whs_2', 'ws_1'), /cannot be decrypted/);
  });

  test('the key falls back to S3_SECRET_KEY, and WEBHOOK_SECRETS_KEY wins', () => {
    const a = secretsEncryptionKey({ S3_SECRET_KEY: 's3-secret' });
    const b = secretsEncryptionKey({ S3_SECRET_KEY: 's3-secret', WEBHOOK_SECRETS_KEY: 'own-key' });
    assert.equal(a.length, 32);
    assert.notDeepEqual(a, b);
    assert.throws(() => secretsEncryptionKey({}), /WEBHOOK_SECRETS_KEY/);
  });
});

describe('target URL rules', () => {
  const refused = (url: string, allowLoopback = false) =>
    assert.throws(
      () => checkWebhookUrl(url, allowLoopback),
      (e: Error) => e.name === 'FetchError',
      url,
    );

  test('upload-from-url rules: https on the default port, no credentials, public IP literals only', () => {
    assert.equal(checkWebhookUrl('https://hooks.example.com/mediagen?token=abc', false).host, 'hooks.example.com');
    for (const url of [
      'http://hooks.example.com/',
      'ftp://hooks.example.com/',
      'https://user:pw@hooks.example.com/',
      'https://hooks.example.com:8443/',
      'https://10.0.0.8/',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://127.0.0.1/',
      'http://127.0.0.1:8080/',
      'not a url',
    ]) {
      refused(url);
    }
  });

  test('WEBHOOK_ALLOW_LOOPBACK lets loopback IP literals through (http or https, any port), nothing else', () => {
    assert.equal(checkWebhookUrl('http://127.0.0.1:8080/hook', true).port, '8080');
    assert.equal(checkWebhookUrl('https://[::1]:8443/hook', true).port, '8443');
    refused('http://localhost:8080/', true);
    refused('http://10.0.0.8:8080/', true);
    refused('http://user:pw@127.0.0.1:8080/', true);
    refused('http://hooks.example.com/', true);
  });

  test('at delivery every resolved address must be public; the first is the one connected to', async () => {
    const resolver = (answers: string[]) => async () => answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    const ok = await resolveWebhookTarget('https://hooks.example.com/x', { allowLoopback: false, resolver: resolver(['93.184.216.34', '2606:2800:220:1::1']) });
    assert.equal(ok.address.address, '93.184.216.34');
    for (const answers of [['127.0.0.1'], ['93.184.216.34', '10.1.2.3'], ['::ffff:192.168.0.1'], ['169.254.169.254'], ['fd00::1'], []]) {
      await assert.rejects(
        resolveWebhookTarget('https://hooks.example.com/x', { allowLoopback: true, resolver: resolver(answers) }),
        /does not resolve to a public address/,
        answers.join(','),
      );
    }
  });

  test('a name that does not resolve now (ENOTFOUND, EAI_AGAIN, a timeout) is a retryable failure, not a refusal', async () => {
    for (const code of ['ENOTFOUND', 'EAI_AGAIN', 'ETIMEOUT']) {
      await assert.rejects(
        resolveWebhookTarget('https://hooks.example.com/x', {
          allowLoopback: false,
          resolver: async () => {
            throw Object.assign(new Error('nx'), { code });
          },
        }),
        (err: unknown) => err instanceof FetchError && err.kind === 'unavailable' && err.message.includes(code),
        code,
      );
    }
  });
});

test('the POST goes to the checked address (no second lookup) and a redirect is answered, not followed', async () => {
  const seen: Array<{ host: string | undefined; url: string | undefined; method: string | undefined }> = [];
  const server = createServer((req, res) => {
    seen.push({ host: req.headers.host, url: req.url, method: req.method });
    req.resume();
    res.writeHead(req.url === '/moved' ? 302 : 204, req.url === '/moved' ? { location: 'http://127.0.0.1:1/elsewhere' } : {}).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  try {
    // A name that resolves nowhere: only the pinned address can reach the server.
    const pinned = { address: '127.0.0.1', family: 4 };
    assert.equal(await postWebhook({ url: new URL(`http://hooks.invalid:${port}/hook?x=1`), address: pinned }, { 'webhook-id': 'whk_1' }, '{}', 2000), 204);
    assert.equal(await postWebhook({ url: new URL(`http://hooks.invalid:${port}/moved`), address: pinned }, {}, '{}', 2000), 302);
    assert.deepEqual(seen, [
      { host: `hooks.invalid:${port}`, url: '/hook?x=1', method: 'POST' },
      { host: `hooks.invalid:${port}`, url: '/moved', method: 'POST' },
    ]);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

test('a job snapshot (to_jsonb) comes back with Date timestamps', () => {
  const job = jobFromSnapshot({ id: 'img_1', created_at: '2026-11-23T13:30:00.123456+00:00', updated_at: '2026-11-23T13:30:01+00:00', finished_at: null });
  assert.equal(job.created_at.getTime(), Date.parse('2026-11-23T13:30:00.123Z'));
  assert.equal(job.finished_at, null);
});
