// Webhook deliveries a customer can inspect and replay, on the real stack over HTTP: a loopback
// receiver answers 500 three times, the delivery is given up after WEBHOOK_RETRY_MAX_ATTEMPTS = 3 and
// GET /v1/webhook-deliveries lists its 3 attempts; a redelivery sends it once more with the same
// webhook-id, signed afresh, and both client libraries' verifyWebhook accept it (the Python one
// run by the pinned virtualenv, PYTHON_CLIENT_HOME); another workspace sees none of it (404), an
// event still in flight answers 409, and the `redeliver` rate class answers 429.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MediaGenClient, MediaGenError } from '@mediagen/client';
import { verifyWebhook } from '@mediagen/client/webhooks';
import { createTenant, waitFor, type Tenant } from '../support/stack.js';
import { api, startService, type Service } from '../support/services.js';
import { runAdmin } from '../../admin/main.js';
import { createApiKey } from '../../db/repos/workspaces.js';
import { Receiver } from '../support/webhook-receiver.js';

const pythonSrc = fileURLToPath(new URL('../../../python/src/', import.meta.url));
const cli = fileURLToPath(new URL('../../../client/bin/mediagen.js', import.meta.url));
const REDELIVER_PER_MIN = 4;

let svc: Service;
const receiver = new Receiver();
let t: Tenant;
let other: Tenant;
let secret: string;

const overrides = {
  WEBHOOK_ALLOW_LOOPBACK: 'true',
  WEBHOOK_TIMEOUT_MS: '1000',
  WEBHOOK_RETRY_INITIAL_MS: '100',
  WEBHOOK_RETRY_MAX_INTERVAL_MS: '200',
  WEBHOOK_RETRY_MAX_ATTEMPTS: '3',
  RATE_LIMIT_GENERATE_PER_MIN: '1000',
  RATE_LIMIT_POLL_PER_MIN: '100000',
  RATE_LIMIT_REDELIVER_PER_MIN: String(REDELIVER_PER_MIN),
};

async function rotate(tenant: Tenant): Promise<string> {
  const r = await runAdmin(['webhook', 'secret', 'rotate', '--workspace', tenant.workspaceId, '--as', tenant.ownerEmail, '--json'], {
    ...process.env,
    DATABASE_URL: svc.tdb.url,
  });
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { secret: string }).secret;
}

async function createImage(tenant: Tenant, prompt: string, webhookUrl: string): Promise<{ id: string }> {
  const r = await api(svc.gw.baseUrl, tenant.apiKey).post('/v1/images/generate', {
    project_id: tenant.projectId,
    prompt,
    model: 'nano-banana-2',
    aspect_ratio: '1:1',
    count: 1,
    webhook_url: webhookUrl,
    webhook_events: ['completed'],
  });
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

/** The Python client, run by the pinned virtualenv: its own list of the event and its verify_webhook of one request. */
function python(input: unknown): Promise<any> {
  const home = process.env.PYTHON_CLIENT_HOME;
  assert.ok(home && existsSync(join(home, '.installed')), 'PYTHON_CLIENT_HOME is not set or not installed: run the tests with `npm test`');
  const script = `
import json, sys
from mediagen import MediaGenClient, verify_webhook
a = json.load(sys.stdin)
with MediaGenClient(api_key=a["api_key"], base_url=a["base_url"]) as mg:
    d = mg.webhook_deliveries.get(a["id"])
    listed = mg.webhook_deliveries.list(job_id=a["job_id"])["data"]
event = verify_webhook(a["secret"], a["body"], a["headers"])
print(json.dumps({"attempts": [x["status_code"] for x in d["attempts"]], "listed": [x["id"] for x in listed], "type": event["type"], "job": event["data"]["id"]}))
`;
  return new Promise((resolve, reject) => {
    const child = spawn(join(home!, 'venv', 'bin', 'python'), ['-c', script], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PYTHONPATH: pythonSrc, PYTHONDONTWRITEBYTECODE: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(out));
      else reject(new Error(`python exited ${code}: ${err}`));
    });
    child.stdin.end(JSON.stringify(input));
  });
}

/** The `mediagen` CLI with the tenant's key: exit code and output. */
function runCli(key: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', MEDIAGEN_API_KEY: key, MEDIAGEN_BASE_URL: svc.gw.baseUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

before(async () => {
  svc = await startService(overrides);
  await receiver.start();
  t = await createTenant(svc.tdb.db, 1000);
  other = await createTenant(svc.tdb.db, 1000);
  secret = await rotate(t);
});

after(async () => {
  const rows = await svc?.tdb.db.selectFrom('webhook_deliveries').select(['id', 'redeliveries']).execute();
  for (const r of rows ?? [])
    for (const id of [r.id, ...Array.from({ length: r.redeliveries }, (_, i) => `${r.id}/redeliver-${i + 1}`)])
      await svc.gw.client.workflow
        .getHandle(id)
        .terminate('test over')
        .catch(() => undefined);
  await receiver.close();
  await svc?.close();
});

describe('webhook deliveries', () => {
  test('a delivery that failed 3 times lists 3 attempts; redeliver sends it once more, same webhook-id, verified by both clients', async () => {
    const path = '/hooks/failing?token=s3cr3t-query-value';
    receiver.scripts.set(path, [500, 500, 500, 200]);
    const mg = new MediaGenClient({ baseUrl: svc.gw.baseUrl, apiKey: t.apiKey, maxRetries: 0 });
    const job = await createImage(t, 'a lighthouse at dusk', `${receiver.base}${path}`);

    const failed = await waitFor('the delivery given up', async () => {
      const page = await mg.webhookDeliveries.list({ job_id: job.id });
      return page.data.length === 1 && page.data[0]!.status === 'failed' ? page.data[0]! : undefined;
    });
    assert.equal(failed.event, 'job.completed');
    assert.equal(failed.job_id, job.id);
    assert.ok(!failed.url.includes('s3cr3t'), `the URL shows no query value: ${failed.url}`);
    assert.equal(failed.url, `${receiver.base}/hooks/failing`);
    assert.equal(failed.host, new URL(receiver.base).host);
    assert.deepEqual(
      failed.attempts.map((a) => [a.number, a.status_code, a.error_class]),
      [
        [1, 500, 'http_5xx'],
        [2, 500, 'http_5xx'],
        [3, 500, 'http_5xx'],
      ],
    );
    for (const a of failed.attempts) assert.ok(typeof a.latency_ms === 'number' && a.latency_ms >= 0 && a.latency_ms < 1000, `latency ${a.latency_ms}`);
    assert.ok(failed.attempts[0]!.next_retry_at && failed.attempts[1]!.next_retry_at, 'the first two attempts had a retry scheduled');
    assert.equal(failed.attempts[2]!.next_retry_at, null, 'the last attempt had none (max attempts)');
    assert.equal(failed.next_retry_at, null);
    const got = receiver.at(path);
    assert.equal(got.length, 3, 'three requests, one per attempt');
    const webhookId = got[0]!.headers['webhook-id'];
    assert.equal(webhookId, failed.id, 'the delivery id is the webhook-id');

    // Filters: status, event, job; a job filter that matches nothing.
    assert.ok((await mg.webhookDeliveries.list({ status: 'failed' })).data.some((d) => d.id === failed.id));
    assert.ok(!(await mg.webhookDeliveries.list({ status: 'delivered' })).data.some((d) => d.id === failed.id));
    assert.ok((await mg.webhookDeliveries.list({ event: 'job.completed' })).data.some((d) => d.id === failed.id));
    assert.equal((await mg.webhookDeliveries.list({ event: 'job.failed' })).data.length, 0);
    assert.equal((await mg.webhookDeliveries.list({ job_id: 'img_none' })).data.length, 0);
    assert.equal((await api(svc.gw.baseUrl, t.apiKey).get('/v1/webhook-deliveries?status=lost')).status, 400);

    // Another workspace neither sees nor replays it.
    const stranger = api(svc.gw.baseUrl, other.apiKey);
    assert.equal((await stranger.get(`/v1/webhook-deliveries/${failed.id}`)).status, 404);
    const refused = await stranger.post(`/v1/webhook-deliveries/${failed.id}/redeliver`);
    assert.equal(refused.status, 404);
    assert.equal(refused.body.error.code, 'not_found');
    assert.equal((await stranger.get('/v1/webhook-deliveries')).body.data.length, 0);

    // Signed afresh: wait for a new second so the new webhook-timestamp must differ.
    const firstTs = Number(got[2]!.headers['webhook-timestamp']);
    await waitFor('a new second', () => Math.floor(Date.now() / 1000) > firstTs);
    const redelivering = await mg.webhookDeliveries.redeliver(failed.id);
    assert.equal(redelivering.redeliveries, 1);
    const delivered = await waitFor('the redelivery delivered', async () => {
      const d = await mg.webhookDeliveries.get(failed.id);
      return d.status === 'delivered' ? d : undefined;
    });
    const all = receiver.at(path);
    assert.equal(all.length, 4, 'exactly one more request');
    const again = all[3]!;
    assert.equal(again.headers['webhook-id'], webhookId, 'the same webhook-id');
    assert.ok(Number(again.headers['webhook-timestamp']) > firstTs, 'a new timestamp');
    assert.equal(again.body, got[0]!.body, 'the same event');
    const event = verifyWebhook(secret, again.body, again.headers);
    assert.equal(event.type, 'job.completed');
    assert.deepEqual(
      delivered.attempts.map((a) => [a.number, a.status_code, a.error_class]),
      [
        [1, 500, 'http_5xx'],
        [2, 500, 'http_5xx'],
        [3, 500, 'http_5xx'],
        [4, 200, null],
      ],
    );
    assert.equal(delivered.next_retry_at, null);

    // The CLI lists the same attempts.
    const listed = await runCli(t.apiKey, ['--json', 'webhooks', 'deliveries', '--job', job.id]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      (JSON.parse(listed.stdout) as { data: Array<{ attempts: Array<{ status_code: number }> }> }).data[0]!.attempts.map((a) => a.status_code),
      [500, 500, 500, 200],
    );
    const human = await runCli(t.apiKey, ['webhooks', 'deliveries', '--status', 'delivered']);
    assert.equal(human.code, 0, human.stderr);
    assert.match(
      human.stdout,
      new RegExp(`${failed.id}.*job\\.completed.*delivered.*500 \\(\\d+ ms\\), 500 \\(\\d+ ms\\), 500 \\(\\d+ ms\\), 200 \\(\\d+ ms\\)`),
    );

    const py = await python({ api_key: t.apiKey, base_url: svc.gw.baseUrl, id: failed.id, job_id: job.id, secret, body: again.body, headers: again.headers });
    assert.deepEqual(py, { attempts: [500, 500, 500, 200], listed: [failed.id], type: 'job.completed', job: job.id });
    // A tampered body fails the Python client's verification too.
    await assert.rejects(
      python({ api_key: t.apiKey, base_url: svc.gw.baseUrl, id: failed.id, job_id: job.id, secret, body: again.body + ' ', headers: again.headers }),
      /invalid_signature|verification failed/,
    );
  });

  test('an event in flight is refused (409), and the redeliver rate class answers 429', async () => {
    const path = '/hooks/hanging';
    receiver.scripts.set(path, ['hang']);
    const job = await createImage(t, 'a quiet harbour', `${receiver.base}${path}`);
    const row = await waitFor('the outbox row', async () => {
      const page = await api(svc.gw.baseUrl, t.apiKey).get(`/v1/webhook-deliveries?job_id=${job.id}`);
      return page.body.data[0] as { id: string; status: string } | undefined;
    });
    assert.equal(row.status, 'pending');
    // Its own key: the limit is counted per key and class.
    const key = await createTenantKey(t);
    const client = api(svc.gw.baseUrl, key);
    const statuses: number[] = [];
    for (let i = 0; i < REDELIVER_PER_MIN + 3; i++) {
      const r = await client.post(`/v1/webhook-deliveries/${row.id}/redeliver`);
      statuses.push(r.status);
      if (r.status === 409) assert.equal(r.body.error.code, 'delivery_in_flight');
      if (r.status === 429) {
        assert.equal(r.body.error.code, 'rate_limited');
        assert.ok(Number(r.headers.get('retry-after')) >= 1);
        break;
      }
    }
    assert.equal(statuses[statuses.length - 1], 429, `answers: ${statuses.join(' ')}`);
    assert.ok(
      statuses.slice(0, -1).every((s) => s === 409),
      `answers: ${statuses.join(' ')}`,
    );
    assert.ok(statuses.length - 1 <= REDELIVER_PER_MIN, `at most ${REDELIVER_PER_MIN} admitted: ${statuses.join(' ')}`);
    // The CLI and the TS client surface the refusal.
    const refusedByCli = await runCli(t.apiKey, ['webhooks', 'redeliver', row.id]);
    assert.notEqual(refusedByCli.code, 0);
    assert.match(refusedByCli.stderr, /not finished yet/);
    const mg = new MediaGenClient({ baseUrl: svc.gw.baseUrl, apiKey: t.apiKey, maxRetries: 0 });
    await assert.rejects(mg.webhookDeliveries.redeliver(row.id), (e: unknown) => e instanceof MediaGenError && e.code === 'delivery_in_flight');
  });
});

async function createTenantKey(tenant: Tenant): Promise<string> {
  const k = await createApiKey(svc.tdb.db, { workspaceId: tenant.workspaceId, name: 'redeliver', actorEmail: tenant.ownerEmail });
  return k.key;
}
