// Webhook endpoints the customer manages, end to end on the real stack: endpoints created over
// HTTP with loopback URLs (WEBHOOK_ALLOW_LOOPBACK, test-only) get exactly the events they subscribe
// to from the worker's delivery workflows, beside a job's per-request webhook_url and with the same
// webhook-id; a rotation signs with both secrets during its overlap and with the new one after; the
// test ping is verified by the npm standardwebhooks package and both clients' verifyWebhook.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook } from '@mediagen/client/webhooks';
import { createTenant, testConfig, waitFor, type Tenant } from '../support/stack.js';
import { api, startService, waitForJobStatus, type Service } from '../support/services.js';
import { Receiver, type Received } from '../support/webhook-receiver.js';
import { rotateWebhookSecret } from '../../db/repos/webhooks.js';
import { addMember, createApiKey } from '../../db/repos/workspaces.js';
import { secretsEncryptionKey } from '../../shared/webhooks/signing.js';

const pythonSrc = fileURLToPath(new URL('../../../python/src/', import.meta.url));
const cli = fileURLToPath(new URL('../../../client/bin/mediagen.js', import.meta.url));

let svc: Service;
const receiver = new Receiver();
let t: Tenant;
let workspaceSecret: string;
let pathSeq = 0;
const newPath = (name: string) => `/endpoints/${name}-${++pathSeq}`;

const overrides = {
  WEBHOOK_ALLOW_LOOPBACK: 'true',
  WEBHOOK_TIMEOUT_MS: '1000',
  WEBHOOK_RETRY_INITIAL_MS: '100',
  WEBHOOK_RETRY_MAX_INTERVAL_MS: '300',
  RATE_LIMIT_GENERATE_PER_MIN: '1000',
  RATE_LIMIT_POLL_PER_MIN: '100000',
  RATE_LIMIT_REDELIVER_PER_MIN: '1000',
};

const http = (key = t.apiKey) => api(svc.gw.baseUrl, key);

async function createEndpoint(body: Record<string, unknown>): Promise<{ id: string; secret: string; [k: string]: unknown }> {
  const r = await http().post('/v1/webhook-endpoints', body);
  assert.equal(r.status, 200, r.text);
  assert.match(r.body.data.secret, /^whsec_/);
  return r.body.data;
}

const verifies = (secret: string, r: Received) => {
  try {
    new Webhook(secret).verify(r.body, r.headers);
    return true;
  } catch {
    return false;
  }
};

/** Python's verify_webhook over the same request: the event type it returns, or the error code it raises. */
async function pythonVerify(secret: string, r: Received): Promise<string> {
  const home = process.env.PYTHON_CLIENT_HOME;
  assert.ok(home && existsSync(join(home, '.installed')), 'PYTHON_CLIENT_HOME is not installed: run with `npm test`');
  const script = [
    'import json, sys',
    'from mediagen import verify_webhook, MediaGenError',
    'a = json.load(sys.stdin)',
    'try:',
    '    print(verify_webhook(a["secret"], a["body"].encode(), a["headers"])["type"])',
    'except MediaGenError as e:',
    '    print(e.code)',
  ].join('\n');
  return new Promise((resolve, reject) => {
    const child = spawn(join(home, 'venv', 'bin', 'python'), ['-c', script], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PYTHONPATH: pythonSrc, PYTHONDONTWRITEBYTECODE: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`python exited ${code}: ${err}`))));
    child.stdin.end(JSON.stringify({ secret, body: r.body, headers: r.headers }));
  });
}

/** Every outbox row of the job delivered, `expected` of them. */
async function jobDelivered(jobId: string, expected: number): Promise<void> {
  await waitFor(`${expected} delivered webhook deliveries of ${jobId}`, async () => {
    const rows = await svc.tdb.db.selectFrom('webhook_deliveries').select(['delivered_at']).where('job_id', '=', jobId).execute();
    return rows.length === expected && rows.every((r) => r.delivered_at !== null);
  });
}

/** Sends a test ping and waits for its one request at `path`. */
async function ping(endpointId: string, path: string): Promise<Received> {
  const before = receiver.at(path).length;
  const r = await http().post(`/v1/webhook-endpoints/${endpointId}/test`, {});
  assert.equal(r.status, 200, r.text);
  const got = await waitFor(`the ping at ${path}`, () => receiver.at(path).length > before && receiver.at(path)[before]);
  assert.equal(got.headers['webhook-id'], r.body.data.event_id, 'the ping carries its event id as webhook-id');
  return got;
}

/** The mediagen CLI with the tenant's key: exit code and output. */
function mediagen(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, '--json', ...args], {
      env: { ...process.env, MEDIAGEN_API_KEY: t.apiKey, MEDIAGEN_BASE_URL: svc.gw.baseUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

before(async () => {
  svc = await startService(overrides);
  await receiver.start();
  t = await createTenant(svc.tdb.db, 1000);
  const config = testConfig(svc.tdb.url, overrides);
  workspaceSecret = (
    await rotateWebhookSecret(svc.tdb.db, { workspaceId: t.workspaceId, actorEmail: t.ownerEmail, graceSeconds: 0, key: secretsEncryptionKey(config) })
  ).secret;
});

after(async () => {
  const rows = await svc?.tdb.db.selectFrom('webhook_deliveries').select('id').where('delivered_at', 'is', null).execute();
  for (const r of rows ?? [])
    await svc.gw.client.workflow
      .getHandle(r.id)
      .terminate('test over')
      .catch(() => undefined);
  await receiver.close();
  await svc?.close();
});

describe('webhook endpoints', () => {
  test('each endpoint gets exactly the events it subscribes to, with the per-request delivery’s webhook-id; a disabled one gets nothing', async () => {
    const [completedPath, allPath, disabledPath, requestPath] = [newPath('completed'), newPath('all'), newPath('disabled'), newPath('request')];
    const completedOnly = await createEndpoint({ url: `${receiver.base}${completedPath}`, event_types: ['job.completed'] });
    const everyJobEvent = await createEndpoint({ url: `${receiver.base}${allPath}`, event_types: ['job.*'], description: 'all job events' });
    const disabled = await createEndpoint({ url: `${receiver.base}${disabledPath}`, event_types: ['job.*'], enabled: false });
    assert.equal(disabled.enabled, false);

    // One job with a per-request webhook_url, one without: the endpoints get both jobs' events.
    const withUrl = await http().post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: 'a harbour at dawn',
      model: 'nano-banana-2',
      aspect_ratio: '1:1',
      count: 1,
      webhook_url: `${receiver.base}${requestPath}`,
      webhook_events: ['generating', 'completed'],
    });
    assert.equal(withUrl.status, 200, withUrl.text);
    const without = await http().post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: 'a quiet field',
      model: 'nano-banana-2',
      aspect_ratio: '1:1',
      count: 1,
    });
    assert.equal(without.status, 200, without.text);
    const jobs = [withUrl.body.data.id as string, without.body.data.id as string];
    for (const id of jobs) await waitForJobStatus(http(), `/v1/images/${id}`, ['completed']);
    // Per job: generating and completed to the job.* endpoint, completed to the other; plus the first job's two per-request.
    await jobDelivered(jobs[0]!, 5);
    await jobDelivered(jobs[1]!, 3);

    const typesAt = (path: string, secret: string) =>
      receiver.at(path).map((r) => {
        const e = verifyWebhook<{ id: string }>(secret, r.body, r.headers);
        return `${e.data.id} ${e.type}`;
      });
    assert.deepEqual(typesAt(completedPath, completedOnly.secret).sort(), jobs.map((j) => `${j} job.completed`).sort(), 'job.completed only');
    assert.deepEqual(
      typesAt(allPath, everyJobEvent.secret).sort(),
      jobs.flatMap((j) => [`${j} job.completed`, `${j} job.generating`]).sort(),
      'job.* gets the other events too',
    );
    assert.deepEqual(receiver.at(disabledPath), [], 'a disabled endpoint receives nothing');
    const disabledRows = await svc.tdb.db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', disabled.id).execute();
    assert.deepEqual(disabledRows, [], 'nor is anything written for it');

    // One webhook-id per event, whichever way it came; each endpoint signs with its own secret.
    const perRequest = receiver.at(requestPath).map((r) => ({ id: r.headers['webhook-id'], type: verifyWebhook(workspaceSecret, r.body, r.headers).type }));
    const completedId = perRequest.find((e) => e.type === 'job.completed')!.id;
    assert.equal(
      completedId,
      `whk_${jobs[0]}_${(await svc.tdb.db.selectFrom('jobs').select('event_seq').where('id', '=', jobs[0]!).executeTakeFirstOrThrow()).event_seq}`,
    );
    const idsOf = (path: string) => receiver.at(path).map((r) => r.headers['webhook-id']);
    assert.ok(idsOf(completedPath).includes(completedId) && idsOf(allPath).includes(completedId), 'the endpoints got the same webhook-id');
    assert.equal(verifies(completedOnly.secret, receiver.at(allPath)[0]!), false, "another endpoint's secret does not verify");

    // The deliveries name their endpoint and event.
    const listed = await http().get(`/v1/webhook-deliveries?endpoint_id=${completedOnly.id}`);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.data.length, 2);
    for (const d of listed.body.data) {
      assert.equal(d.endpoint_id, completedOnly.id);
      assert.equal(d.event, 'job.completed');
      assert.equal(d.id, `${d.event_id}_${completedOnly.id}`);
      assert.equal(d.status, 'delivered');
    }
    const own = await http().get(`/v1/webhook-deliveries?job_id=${jobs[0]}&event=job.completed`);
    const perRequestRow = own.body.data.find((d: { endpoint_id: string | null }) => d.endpoint_id === null);
    assert.equal(perRequestRow.id, completedId, 'the per-request delivery keeps the event id as its id');
    assert.equal(perRequestRow.event_id, completedId);
  });

  test('after a rotation both secrets verify during the overlap, only the new one after it; the ping verifies with both clients', async () => {
    const path = newPath('rotated');
    const created = await createEndpoint({ url: `${receiver.base}${path}`, event_types: ['pipeline.*'] });
    const first = await ping(created.id, path);
    assert.equal(verifyWebhook(created.secret, first.body, first.headers).type, 'webhook.ping');
    assert.equal(await pythonVerify(created.secret, first), 'webhook.ping');
    assert.equal(first.headers['webhook-signature']!.split(' ').length, 1);

    const rotated = await http().post(`/v1/webhook-endpoints/${created.id}/rotate-secret`, { overlap_seconds: 3600 });
    assert.equal(rotated.status, 200, rotated.text);
    const next = rotated.body.data.secret as string;
    assert.notEqual(next, created.secret);
    assert.ok(rotated.body.data.previous_secret_expires_at, 'the overlap is stated');

    const during = await ping(created.id, path);
    assert.equal(during.headers['webhook-signature']!.split(' ').length, 2, 'two signatures during the overlap');
    for (const secret of [created.secret, next]) {
      assert.equal(verifyWebhook(secret, during.body, during.headers).type, 'webhook.ping');
      assert.equal(await pythonVerify(secret, during), 'webhook.ping');
    }

    // The overlap ends (its clock moved past the end, rather than waiting an hour).
    await sql`update webhook_endpoints set previous_expires_at = now() - interval '1 second' where id = ${created.id}`.execute(svc.tdb.db);
    const afterOverlap = await ping(created.id, path);
    assert.equal(afterOverlap.headers['webhook-signature']!.split(' ').length, 1, 'one signature after the overlap');
    assert.equal(verifyWebhook(next, afterOverlap.body, afterOverlap.headers).type, 'webhook.ping');
    assert.equal(verifies(created.secret, afterOverlap), false, 'the old secret verifies no more');
    assert.throws(() => verifyWebhook(created.secret, afterOverlap.body, afterOverlap.headers), /verification failed/);
    assert.equal(await pythonVerify(created.secret, afterOverlap), 'invalid_signature');
    assert.equal(await pythonVerify(next, afterOverlap), 'webhook.ping');
    const shown = await http().get(`/v1/webhook-endpoints/${created.id}`);
    assert.equal(shown.body.data.previous_secret_expires_at, null);
    assert.equal(shown.body.data.secret, undefined, 'a secret is never shown again');
  });

  test('owner keys change endpoints, audited; any key reads; bad input is a 4xx; a disabled endpoint refuses a ping', async () => {
    const memberEmail = `member-${pathSeq}@example.test`;
    await addMember(svc.tdb.db, t.workspaceId, memberEmail, 'owner');
    const memberKey = (await createApiKey(svc.tdb.db, { workspaceId: t.workspaceId, name: 'member', actorEmail: memberEmail })).key;
    // Demoted before the key's first use: the gateway sees a member's key.
    await addMember(svc.tdb.db, t.workspaceId, memberEmail, 'member');
    const url = `${receiver.base}${newPath('crud')}`;
    const refused = await http(memberKey).post('/v1/webhook-endpoints', { url, event_types: ['job.*'] });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.code, 'owner_key_required');

    for (const [body, field] of [
      [{ url: 'ftp://example.com/x', event_types: ['job.*'] }, 'url'],
      [{ url, event_types: ['job.created'] }, 'event_types'],
      [{ url, event_types: [] }, 'event_types'],
      [{ url, event_types: ['job.*'], extra: 1 }, 'extra'],
    ] as const) {
      const r = await http().post('/v1/webhook-endpoints', body);
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.body.error.code, 'invalid_request');
      assert.match(r.body.error.message, new RegExp(field));
    }

    const e = await createEndpoint({ url, event_types: ['balance.*', 'budget.threshold_reached'] });
    const listed = await http(memberKey).get('/v1/webhook-endpoints');
    assert.equal(listed.status, 200);
    assert.ok(
      listed.body.data.some((x: { id: string; secret?: string }) => x.id === e.id && x.secret === undefined),
      'a member key lists it, without a secret',
    );
    assert.equal((await http(memberKey).post(`/v1/webhook-endpoints/${e.id}/rotate-secret`, {})).status, 403);

    const off = await http().post(`/v1/webhook-endpoints/${e.id}`, { enabled: false, event_types: ['balance.low'] });
    assert.equal(off.status, 200, off.text);
    assert.deepEqual([off.body.data.enabled, off.body.data.event_types], [false, ['balance.low']]);
    const pinged = await http().post(`/v1/webhook-endpoints/${e.id}/test`, {});
    assert.equal(pinged.status, 409);
    assert.equal(pinged.body.error.code, 'webhook_endpoint_disabled');

    assert.equal((await http().call('DELETE', `/v1/webhook-endpoints/${e.id}`)).status, 200);
    assert.equal((await http().get(`/v1/webhook-endpoints/${e.id}`)).status, 404);
    assert.equal((await http().call('DELETE', `/v1/webhook-endpoints/${e.id}`)).status, 404);
    assert.equal((await http().get('/v1/webhook-endpoints/wep_nope')).status, 404);

    const audit = await svc.tdb.db.selectFrom('audit_events').select(['action', 'actor']).where('target_id', '=', e.id).orderBy('created_at').execute();
    assert.deepEqual(
      audit.map((a) => a.action),
      ['webhook_endpoint.created', 'webhook_endpoint.updated', 'webhook_endpoint.deleted'],
    );
    assert.ok(audit.every((a) => a.actor === `key:${t.apiKeyId}`));
    const text = JSON.stringify(await svc.tdb.db.selectFrom('audit_events').selectAll().where('workspace_id', '=', t.workspaceId).execute());
    assert.ok(!text.includes('whsec_'), 'no secret in the audit log');
  });

  test('balance.low reaches a balance.* endpoint once per crossing, also when the alerts have no URL of their own', async () => {
    const w = await createTenant(svc.tdb.db, 50);
    const path = newPath('balance');
    const r = await api(svc.gw.baseUrl, w.apiKey).post('/v1/webhook-endpoints', { url: `${receiver.base}${path}`, event_types: ['balance.*'] });
    assert.equal(r.status, 200, r.text);
    const alerts = await api(svc.gw.baseUrl, w.apiKey).call('PUT', '/v1/balance/alerts', { thresholds: [50] });
    assert.equal(alerts.status, 200, alerts.text);
    assert.deepEqual(alerts.body.data, { thresholds: [50], url: null });
    const job = await api(svc.gw.baseUrl, w.apiKey).post('/v1/images/generate', {
      project_id: w.projectId,
      prompt: 'a kite',
      model: 'nano-banana-2',
      aspect_ratio: '1:1',
      count: 1,
    });
    assert.equal(job.status, 200, job.text);
    const got = await waitFor('the balance.low delivery', () => receiver.at(path)[0]);
    const e = verifyWebhook<{ threshold: number; previous: number }>(r.body.data.secret, got.body, got.headers);
    assert.deepEqual([e.type, e.data.threshold, e.data.previous], ['balance.low', 50, 50]);
    const rows = await svc.tdb.db
      .selectFrom('webhook_deliveries')
      .select(['endpoint_id'])
      .where('workspace_id', '=', w.workspaceId)
      .where('type', '=', 'balance.low')
      .execute();
    assert.deepEqual(rows, [{ endpoint_id: r.body.data.id }], 'one delivery, to the endpoint: no alert URL was set');
  });

  test('the CLI creates, lists, tests and rotates an endpoint', async () => {
    const path = newPath('cli');
    const created = await mediagen(['webhooks', 'endpoints', 'create', '--url', `${receiver.base}${path}`, '--event', 'job.completed', '--event', 'balance.*']);
    assert.equal(created.code, 0, created.stderr);
    const e = JSON.parse(created.stdout) as { id: string; secret: string; event_types: string[] };
    assert.deepEqual(e.event_types, ['job.completed', 'balance.*']);
    const listed = await mediagen(['webhooks', 'endpoints', 'list']);
    assert.ok((JSON.parse(listed.stdout) as Array<{ id: string }>).some((x) => x.id === e.id));
    const pinged = await mediagen(['webhooks', 'endpoints', 'test', e.id]);
    assert.equal(pinged.code, 0, pinged.stderr);
    const got = await waitFor('the CLI ping', () => receiver.at(path)[0]);
    assert.equal(verifyWebhook(e.secret, got.body, got.headers).type, 'webhook.ping');
    const rotated = await mediagen(['webhooks', 'endpoints', 'rotate-secret', e.id, '--overlap-seconds', '0']);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.equal(
      (JSON.parse(rotated.stdout) as { previous_secret_expires_at: string | null }).previous_secret_expires_at,
      null,
      'overlap 0: the old secret stops now',
    );
    const deliveries = await mediagen(['webhooks', 'deliveries', '--endpoint', e.id]);
    assert.equal(deliveries.code, 0, deliveries.stderr);
    assert.deepEqual(
      (JSON.parse(deliveries.stdout) as { data: Array<{ endpoint_id: string; event: string }> }).data.map((d) => [d.endpoint_id, d.event]),
      [[e.id, 'webhook.ping']],
    );
  });
});
