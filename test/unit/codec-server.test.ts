// The codec server (codec/server.ts, codec/http.ts) over real HTTP on loopback: Temporal's codec
// protocol for an authenticated caller only (bearer token, or the session cookie of its login page),
// CORS answers for the configured UI origin only, and start-up refusing a weak or missing token.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { defaultPayloadConverter } from '@temporalio/common';
import { startCodecServer, type CodecServer } from '../../codec/server.js';

const token = randomBytes(24).toString('base64url');
const ui = 'http://127.0.0.1:18080';
const env = {
  PAYLOAD_CODEC_KEYS: `k1:${randomBytes(32).toString('base64')}`,
  PAYLOAD_CODEC_KEY_ID: 'k1',
  CODEC_SERVER_TOKEN: token,
  CODEC_SERVER_PORT: '0',
  CODEC_SERVER_CORS_ORIGINS: ui,
  HOST: '127.0.0.1',
};
let codec: CodecServer;
const clear = defaultPayloadConverter.toPayload('the customer prompt 91c2');
const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');
const jsonPayload = { metadata: Object.fromEntries(Object.entries(clear.metadata!).map(([k, v]) => [k, b64(v)])), data: b64(clear.data!) };

before(async () => {
  codec = await startCodecServer(env, pino({ level: 'silent' }));
});
after(() => codec?.close());

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${codec.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

test('encode then decode round-trips for a bearer caller; the encoded form holds no clear text', async () => {
  const enc = await post('/encode', { payloads: [jsonPayload] }, { authorization: `Bearer ${token}`, 'x-namespace': 'default' });
  assert.equal(enc.status, 200);
  const encoded = (await enc.json()) as { payloads: Array<{ metadata: Record<string, string>; data: string }> };
  assert.equal(Buffer.from(encoded.payloads[0]!.metadata.encoding!, 'base64').toString(), 'binary/encrypted');
  assert.ok(!Buffer.from(encoded.payloads[0]!.data, 'base64').toString('latin1').includes('91c2'));
  // Only the last path segment counts (an endpoint may sit under a prefix), and the UI adds a query.
  const dec = await post('/ns/default/decode?preserveStorageRefs=true', encoded, { authorization: `Bearer ${token}` });
  assert.equal(dec.status, 200);
  const decoded = (await dec.json()) as { payloads: Array<{ data: string }> };
  assert.equal(JSON.parse(Buffer.from(decoded.payloads[0]!.data, 'base64').toString()), 'the customer prompt 91c2');
});

test('no credential, a wrong token, a forged cookie or another namespace: nothing is decoded', async () => {
  for (const headers of [
    {} as Record<string, string>,
    { authorization: `Bearer ${token}x` },
    { authorization: token },
    { cookie: `mg_codec_session=9999999999.${'A'.repeat(43)}` },
  ]) {
    const res = await post('/decode', { payloads: [jsonPayload] }, headers);
    assert.equal(res.status, 401, JSON.stringify(headers));
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'unauthorized');
  }
  const other = await post('/decode', { payloads: [jsonPayload] }, { authorization: `Bearer ${token}`, 'x-namespace': 'someone-else' });
  assert.equal(other.status, 403);
  const bad = await post('/decode', { nope: 1 }, { authorization: `Bearer ${token}` });
  assert.equal(bad.status, 400);
});

test('CORS: the UI origin gets a credentialed preflight answer; any other origin is refused', async () => {
  const pre = await fetch(`${codec.url}/decode`, {
    method: 'OPTIONS',
    headers: { origin: ui, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace' },
  });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers.get('access-control-allow-origin'), ui);
  assert.equal(pre.headers.get('access-control-allow-credentials'), 'true');
  assert.match(pre.headers.get('access-control-allow-headers') ?? '', /x-namespace/);
  const evil = 'http://127.0.0.1:18081';
  const preEvil = await fetch(`${codec.url}/decode`, { method: 'OPTIONS', headers: { origin: evil, 'access-control-request-method': 'POST' } });
  assert.equal(preEvil.status, 403);
  assert.equal(preEvil.headers.get('access-control-allow-origin'), null);
  const postEvil = await post('/decode', { payloads: [jsonPayload] }, { origin: evil, authorization: `Bearer ${token}` });
  assert.equal(postEvil.status, 403, 'a request from another origin is refused even with the token');
});

test('the login page sets a session cookie (never the token) that the UI origin may use; a wrong token sets none', async () => {
  const form = (t: string, origin = codec.url) =>
    fetch(`${codec.url}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
      body: new URLSearchParams({ token: t }),
    });
  const wrong = await form('not-the-token');
  assert.equal(wrong.status, 401);
  assert.equal(wrong.headers.get('set-cookie'), null);
  const crossSite = await form(token, ui);
  assert.equal(crossSite.status, 403, 'login only from the codec server page itself');
  const ok = await form(token);
  assert.equal(ok.status, 200);
  const cookie = ok.headers.get('set-cookie') ?? '';
  assert.match(cookie, /^mg_codec_session=\d+\.[\w-]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+/);
  assert.ok(!cookie.includes(token));
  const session = cookie.split(';')[0]!;
  const dec = await post('/decode', { payloads: [jsonPayload] }, { cookie: session, origin: ui });
  assert.equal(dec.status, 200);
  assert.equal(dec.headers.get('access-control-allow-origin'), ui);
});

test('a sign-in over HTTPS (behind a TLS proxy, or from an https page) gets a Secure cookie; over plain HTTP it cannot be Secure', async () => {
  const signIn = (headers: Record<string, string>) =>
    fetch(`${codec.url}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: codec.url, ...headers },
      body: new URLSearchParams({ token }),
    });
  const plain = await signIn({});
  assert.equal(plain.status, 200);
  assert.doesNotMatch(plain.headers.get('set-cookie') ?? '', /Secure/);
  const proxied = await signIn({ 'x-forwarded-proto': 'https' });
  assert.equal(proxied.status, 200);
  assert.match(proxied.headers.get('set-cookie') ?? '', /; Secure(;|$)/);
  const host = new URL(codec.url).host;
  const fromHttpsPage = await signIn({ origin: `https://${host}` });
  assert.equal(fromHttpsPage.status, 200);
  assert.match(fromHttpsPage.headers.get('set-cookie') ?? '', /; Secure(;|$)/);
});

test('start-up refuses a missing or short token and a malformed origin, naming the variable only', async () => {
  await assert.rejects(startCodecServer({ ...env, CODEC_SERVER_TOKEN: 'short' }), /CODEC_SERVER_TOKEN .* at least 32/);
  await assert.rejects(startCodecServer({ ...env, CODEC_SERVER_TOKEN: '' }), /CODEC_SERVER_TOKEN/);
  await assert.rejects(startCodecServer({ ...env, CODEC_SERVER_CORS_ORIGINS: `${ui}/` }), /CODEC_SERVER_CORS_ORIGINS/);
  await assert.rejects(startCodecServer({ ...env, PAYLOAD_CODEC_KEYS: '', PAYLOAD_CODEC_KEY_ID: '' }), /needs PAYLOAD_CODEC_KEYS/);
});
