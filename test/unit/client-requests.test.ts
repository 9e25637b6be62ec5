// The client's request layer with an injected fetch (no network): the Idempotency-Key on creates and
// uploads (the same key on every retry), 429 retries bounded by maxRetries and maxRetryDelayMs,
// errors mapped to MediaGenError; and the webhook helper against a signature computed here by the
// Standard Webhooks rules (HMAC-SHA256 over "id.timestamp.body" with the base64 secret after whsec_).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { MediaGenClient, MediaGenError } from '@mediagen/client';
import { verifyWebhook } from '@mediagen/client/webhooks';

interface Seen {
  method: string;
  path: string;
  idempotencyKey: string | null;
}

/** A fetch that answers from `answers` in order (the last one repeats), recording each request. */
function scripted(answers: (() => Response)[]) {
  const seen: Seen[] = [];
  const fetchImpl: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    seen.push({ method: init?.method ?? 'GET', path: new URL(String(input)).pathname, idempotencyKey: headers.get('idempotency-key') });
    return (answers.length > 1 ? answers.shift()! : answers[0]!)();
  };
  return { seen, fetchImpl };
}

const limited = (retryAfterMs: number) => () =>
  Response.json(
    { error: { code: 'rate_limited', message: 'too many requests' }, retry_after_ms: retryAfterMs },
    { status: 429, headers: { 'x-request-id': 'req_429', 'retry-after': '1' } },
  );
const created = () => Response.json({ data: { id: 'img_1', status: 'pending' } });
const imageBody = { project_id: 'prj_1', prompt: 'a fox', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 } as const;

test('creates carry an Idempotency-Key, the same one on each 429 retry; a new create gets a new key; reads carry none', async () => {
  const gw = scripted([limited(5), limited(5), created]);
  const c = new MediaGenClient({ apiKey: 'k', baseUrl: 'http://gw.invalid/v1', maxRetries: 2, fetch: gw.fetchImpl });
  const job = await c.images.generate(imageBody);
  assert.deepEqual([job.id, job.kind], ['img_1', 'images']);
  assert.equal(gw.seen.length, 3, 'two 429s retried');
  const keys = new Set(gw.seen.map((s) => s.idempotencyKey));
  assert.equal(keys.size, 1, 'one key for the three attempts');
  assert.match([...keys][0]!, /^[0-9a-f-]{36}$/);

  await c.images.generate(imageBody);
  assert.notEqual(gw.seen.at(-1)!.idempotencyKey, gw.seen[0]!.idempotencyKey, 'another create, another key');
  await c.images.generate(imageBody, { idempotencyKey: 'mine-1' });
  assert.equal(gw.seen.at(-1)!.idempotencyKey, 'mine-1', "the caller's key when given");
  await c.uploadFromUrl('https://example.invalid/a.png', { projectId: 'prj_1' });
  assert.ok(gw.seen.at(-1)!.idempotencyKey, 'uploads too');
  await c.images.get('img_1');
  assert.equal(gw.seen.at(-1)!.idempotencyKey, null, 'not on reads');
  assert.equal(gw.seen.at(-1)!.path, '/v1/images/img_1', 'a base URL ending in /v1 is not doubled');
});

test('a 429 past maxRetries, or asking a longer wait than maxRetryDelayMs, is a MediaGenError with retryAfterMs and requestId', async () => {
  const gw = scripted([limited(5)]);
  const c = new MediaGenClient({ apiKey: 'k', baseUrl: 'http://gw.invalid', maxRetries: 1, fetch: gw.fetchImpl });
  await assert.rejects(c.projects.list(), (err: unknown) => {
    assert.ok(err instanceof MediaGenError);
    assert.deepEqual([err.status, err.code, err.retryAfterMs, err.requestId], [429, 'rate_limited', 5, 'req_429']);
    return true;
  });
  assert.equal(gw.seen.length, 2, 'one retry');

  const slow = scripted([limited(120_000)]);
  const impatient = new MediaGenClient({ apiKey: 'k', baseUrl: 'http://gw.invalid', maxRetries: 5, maxRetryDelayMs: 1000, fetch: slow.fetchImpl });
  await assert.rejects(impatient.projects.list(), (err: unknown) => err instanceof MediaGenError && err.retryAfterMs === 120_000);
  assert.equal(slow.seen.length, 1, 'no retry when the wait is longer than the caller allows');
});

test('a non-JSON error body still maps to a MediaGenError named by its status', async () => {
  const gw = scripted([() => new Response('<html>bad gateway</html>', { status: 502, statusText: 'Bad Gateway' })]);
  const c = new MediaGenClient({ apiKey: 'k', baseUrl: 'http://gw.invalid', fetch: gw.fetchImpl });
  await assert.rejects(
    c.voices.list(),
    (err: unknown) => err instanceof MediaGenError && err.status === 502 && err.code === 'http_502' && /502 Bad Gateway/.test(err.message),
  );
});

test('verifyWebhook accepts a Standard Webhooks signature and refuses a tampered body, a wrong secret or an old timestamp', () => {
  const key = randomBytes(24);
  const secret = `whsec_${key.toString('base64')}`;
  const body = JSON.stringify({ type: 'job.completed', data: { id: 'img_1', status: 'completed' } });
  const sign = (id: string, ts: number, payload: string, k = key) => `v1,${createHmac('sha256', k).update(`${id}.${ts}.${payload}`).digest('base64')}`;
  const now = Math.floor(Date.now() / 1000);
  const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(now), 'webhook-signature': sign('msg_1', now, body) };

  const event = verifyWebhook<{ id: string }>(secret, body, headers);
  assert.deepEqual([event.type, event.data.id], ['job.completed', 'img_1']);
  assert.equal(verifyWebhook(secret, body, new Headers(headers)).type, 'job.completed', 'a fetch Headers works too');
  // During a secret rotation both secrets sign: any matching signature of the list is enough.
  const other = randomBytes(24);
  assert.equal(
    verifyWebhook(secret, body, { ...headers, 'webhook-signature': `${sign('msg_1', now, body, other)} ${headers['webhook-signature']}` }).type,
    'job.completed',
  );

  const refused = (h: Record<string, string>, b = body, s = secret) =>
    assert.throws(
      () => verifyWebhook(s, b, h),
      (err: unknown) => err instanceof MediaGenError && err.code === 'invalid_signature',
    );
  refused(headers, body.replace('completed', 'failed'));
  refused(headers, body, `whsec_${other.toString('base64')}`);
  const old = now - 3600;
  refused({ ...headers, 'webhook-timestamp': String(old), 'webhook-signature': sign('msg_1', old, body) });
  refused({ 'webhook-id': 'msg_1', 'webhook-timestamp': String(now) });
});

test('the browser entries (@mediagen/client, /webhooks) import no Node built-ins, directly or through each other', async () => {
  const { readFile } = await import('node:fs/promises');
  const { builtinModules, createRequire } = await import('node:module');
  const require = createRequire(import.meta.url);
  const dir = new URL('./', `file://${require.resolve('@mediagen/client')}`);
  const builtins = new Set(builtinModules);
  const seen = new Set<string>();
  const bad: string[] = [];
  const visit = async (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = await readFile(new URL(file, dir), 'utf8');
    for (const m of source.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
      const spec = m[1] ?? m[2];
      if (!spec) continue;
      if (spec.startsWith('./')) await visit(spec.slice(2));
      else if (spec.startsWith('node:') || builtins.has(spec.split('/')[0]!)) bad.push(`${file} imports ${spec}`);
    }
  };
  await visit('index.js');
  await visit('webhooks.js');
  assert.ok(seen.has('client.js') && seen.has('sse.js') && seen.has('errors.js'), [...seen].join(' '));
  assert.ok(!seen.has('node.js') && !seen.has('cli.js'), 'the Node-only modules stay out of the browser entries');
  assert.deepEqual(bad, []);
});

test("a deprecated model's answer reaches onWarning with its dates; answers without Deprecation do not", async () => {
  const deprecated = () =>
    Response.json(
      { data: { id: 'vid_1', status: 'pending' } },
      {
        headers: {
          deprecation: '@1790208000',
          sunset: 'Sun, 31 Jan 2027 00:00:00 GMT',
          'x-mediagen-warning': 'model sora-2 is deprecated since 2026-09-24; use veo-3.1 instead',
        },
      },
    );
  const gw = scripted([deprecated, created]);
  const warnings: unknown[] = [];
  const c = new MediaGenClient({ apiKey: 'k', baseUrl: 'http://gw.invalid', fetch: gw.fetchImpl, onWarning: (w) => warnings.push(w) });
  await c.videos.generate({ project_id: 'prj_1', prompt: 'a fox', model: 'sora-2' });
  assert.deepEqual(warnings, [
    {
      message: 'model sora-2 is deprecated since 2026-09-24; use veo-3.1 instead',
      deprecatedAt: new Date('2026-09-24T00:00:00Z'),
      sunset: new Date('2027-01-31T00:00:00Z'),
    },
  ]);
  await c.images.generate(imageBody);
  assert.equal(warnings.length, 1, 'no warning without a Deprecation header');
});
