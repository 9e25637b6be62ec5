// Webhooks end to end on the real stack: jobs created over HTTP with a loopback webhook_url
// (WEBHOOK_ALLOW_LOOPBACK, test-only) are delivered by the worker's delivery workflows to a receiver
// on 127.0.0.1, and every delivery is verified with the npm `standardwebhooks` package.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { verifyWebhook } from '@mediagen/client/webhooks';
import { createTenant, testConfig, waitFor, type Tenant } from '../support/stack.js';
import { api, creditsOf, startGateway, startService, startWorkers, waitForJobStatus, type Service, type Workers } from '../support/services.js';
import { runAdmin } from '../../admin/main.js';
import { deliveriesOfJob } from '../../db/repos/webhooks.js';
import { ledgerForJob } from '../support/ledger.js';
import { insertActor, insertUpload, insertVoice } from '../support/fixtures.js';
import { randomUUID } from 'node:crypto';
import { Receiver, type Received } from '../support/webhook-receiver.js';

let svc: Service;
const receiver = new Receiver();
let t: Tenant;
let secret: string;
let pathSeq = 0;
const newPath = (name: string) => `/hooks/${name}-${++pathSeq}`;

async function rotate(tenant: Tenant, graceHours?: number): Promise<string> {
  const args = [
    'webhook',
    'secret',
    'rotate',
    '--workspace',
    tenant.workspaceId,
    '--as',
    tenant.ownerEmail,
    '--json',
    ...(graceHours === undefined ? [] : ['--grace-hours', String(graceHours)]),
  ];
  const r = await runAdmin(args, { ...process.env, DATABASE_URL: svc.tdb.url });
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { secret: string };
  assert.match(out.secret, /^whsec_/);
  return out.secret;
}

async function createImage(tenant: Tenant, prompt: string, webhook: Record<string, unknown>): Promise<any> {
  const r = await api(svc.gw.baseUrl, tenant.apiKey).post('/v1/images/generate', {
    project_id: tenant.projectId,
    prompt,
    model: 'nano-banana-2',
    aspect_ratio: '1:1',
    count: 1,
    ...webhook,
  });
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

/** Waits until every outbox row of the job is delivered (or, with `count`, that many requests arrived). */
async function delivered(jobId: string, expected: number): Promise<void> {
  await waitFor(`${expected} delivered webhook events of ${jobId}`, async () => {
    const rows = await deliveriesOfJob(svc.tdb.db, jobId);
    return rows.length === expected && rows.every((r) => r.delivered_at !== null);
  });
}

function verify(s: string, r: Received): { type: string; data: any } {
  return new Webhook(s).verify(r.body, r.headers) as { type: string; data: any };
}

const overrides = {
  WEBHOOK_ALLOW_LOOPBACK: 'true',
  WEBHOOK_TIMEOUT_MS: '1000',
  WEBHOOK_RETRY_INITIAL_MS: '100',
  WEBHOOK_RETRY_MAX_INTERVAL_MS: '300',
  LOCAL_RENDER_FAULTS: 'true',
  RATE_LIMIT_GENERATE_PER_MIN: '1000',
  RATE_LIMIT_POLL_PER_MIN: '100000',
};

before(async () => {
  svc = await startService(overrides);
  await receiver.start();
  t = await createTenant(svc.tdb.db, 1000);
  secret = await rotate(t);
});

after(async () => {
  // Deliveries still retrying (the silent receiver) end with the suite.
  const rows = await svc?.tdb.db.selectFrom('webhook_deliveries').select('id').where('delivered_at', 'is', null).execute();
  for (const r of rows ?? [])
    await svc.gw.client.workflow
      .getHandle(r.id)
      .terminate('test over')
      .catch(() => undefined);
  await receiver.close();
  await svc?.close();
});

describe('webhooks end to end', () => {
  test('one verified delivery per requested event; the payload is the job record; the default is the terminal events', async () => {
    const path = newPath('all');
    const job = await createImage(t, 'a lighthouse at dusk', { webhook_url: `${receiver.base}${path}`, webhook_events: ['generating', 'completed', 'failed'] });
    assert.equal(job.webhook_url, `${receiver.base}${path}`);
    assert.deepEqual(job.webhook_events, ['generating', 'completed', 'failed']);
    const done = await waitForJobStatus(api(svc.gw.baseUrl, t.apiKey), `/v1/images/${job.id}`, ['completed']);
    await delivered(job.id, 2);

    const got = receiver.at(path);
    assert.equal(got.length, 2, 'exactly one request per event');
    const events = got.map((r) => verify(secret, r));
    assert.deepEqual(events.map((e) => e.type).sort(), ['job.completed', 'job.generating']);
    assert.equal(new Set(got.map((r) => r.headers['webhook-id'])).size, 2, 'a webhook-id per event');
    const completed = events.find((e) => e.type === 'job.completed')!;
    assert.deepEqual(completed.data, done, 'job.completed carries the record GET answers');
    const generating = events.find((e) => e.type === 'job.generating')!;
    assert.equal(generating.data.status, 'generating');
    // The move to generating also prepares the request (an image job has no remote inputs), so the
    // moving transaction wrote the phase the workflow reports next: submitting.
    assert.equal(generating.data.progress.phase, 'submitting', 'the snapshot holds what the moving transaction wrote');
    // The client package verifies the same deliveries.
    for (const r of got) assert.equal(verifyWebhook(secret, r.body, r.headers).type, verify(secret, r).type);

    // The document's webhooks describe these bodies.
    const doc = (await api(svc.gw.baseUrl).get('/v1/openapi.json')).body;
    assert.deepEqual(Object.keys(doc.webhooks).sort(), [
      'balance.low',
      'batch.completed',
      'budget.threshold_reached',
      'job.completed',
      'job.failed',
      'job.generating',
      'pipeline.completed',
      'pipeline.failed',
      'pipeline.step.completed',
      'pipeline.step.failed',
    ]);
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema(doc, 'openapi.json');
    for (const e of events) {
      const validate = ajv.getSchema(`openapi.json#/webhooks/${e.type}/post/requestBody/content/application~1json/schema`)!;
      assert.ok(validate(e), `${e.type} matches the document: ${ajv.errorsText(validate.errors)}`);
    }

    // Only webhook_url: completed and failed; this job completes, so one delivery and no generating event.
    const path2 = newPath('default');
    const job2 = await createImage(t, 'a quiet harbour', { webhook_url: `${receiver.base}${path2}` });
    assert.deepEqual(job2.webhook_events, ['completed', 'failed']);
    await waitForJobStatus(api(svc.gw.baseUrl, t.apiKey), `/v1/images/${job2.id}`, ['completed']);
    await delivered(job2.id, 1);
    assert.deepEqual(
      receiver.at(path2).map((r) => verify(secret, r).type),
      ['job.completed'],
    );
  });

  test('a tampered body fails verification (standardwebhooks and the client)', async () => {
    const path = newPath('tamper');
    const job = await createImage(t, 'a red kite', { webhook_url: `${receiver.base}${path}` });
    await delivered(job.id, 1);
    const [r] = receiver.at(path);
    assert.doesNotThrow(() => verify(secret, r!));
    const tampered = r!.body.replace('"status":"completed"', '"status":"failed"');
    assert.notEqual(tampered, r!.body);
    assert.throws(() => new Webhook(secret).verify(tampered, r!.headers));
    assert.throws(
      () => verifyWebhook(secret, tampered, r!.headers),
      (e: any) => e.code === 'invalid_signature',
    );
  });

  test('a receiver that fails three times then answers gets the event, with the same webhook-id each time', async () => {
    const path = newPath('flaky');
    receiver.scripts.set(path, [500, 503, 500, 200]);
    const job = await createImage(t, 'a windmill', { webhook_url: `${receiver.base}${path}` });
    await delivered(job.id, 1);
    const got = receiver.at(path);
    assert.equal(got.length, 4);
    assert.equal(new Set(got.map((r) => r.headers['webhook-id'])).size, 1, 'the same webhook-id on every retry');
    for (const r of got) assert.equal(verify(secret, r).type, 'job.completed');
    const [row] = await deliveriesOfJob(svc.tdb.db, job.id);
    assert.equal(row!.attempts, 4);
    assert.equal(row!.last_status, 200);
  });

  test('a receiver that never answers leaves the job completed and its credits exact', async () => {
    const path = newPath('silent');
    receiver.scripts.set(path, ['hang']);
    const before = await creditsOf(svc.tdb.db, t);
    const job = await createImage(t, 'a slow receiver', { webhook_url: `${receiver.base}${path}` });
    await waitForJobStatus(api(svc.gw.baseUrl, t.apiKey), `/v1/images/${job.id}`, ['completed']);
    // Attempts time out and are retried, while the job is long done.
    await waitFor(
      'two timed-out attempts',
      async () => ((await deliveriesOfJob(svc.tdb.db, job.id))[0]?.attempts ?? 0) >= 2 && receiver.at(path).length >= 2,
      30_000,
    );
    const [row] = await deliveriesOfJob(svc.tdb.db, job.id);
    assert.equal(row!.delivered_at, null);
    assert.match(row!.last_error ?? '', /no answer within 1000 ms/);
    const stored = (await api(svc.gw.baseUrl, t.apiKey).get(`/v1/images/${job.id}`)).body.data;
    assert.equal(stored.status, 'completed');
    const price = (await svc.tdb.db.selectFrom('jobs').select('price').where('id', '=', job.id).executeTakeFirstOrThrow()).price;
    assert.equal(await creditsOf(svc.tdb.db, t), before - price);
    assert.deepEqual(
      (await ledgerForJob(svc.tdb.db, job.id)).map((l) => [l.reason, l.delta]),
      [['charge', -price]],
    );
  });

  test('a failed job delivers job.failed (and is refunded)', async () => {
    const path = newPath('failed');
    const before = await creditsOf(svc.tdb.db, t);
    const job = await createImage(t, 'doomed [fail:terminal]', { webhook_url: `${receiver.base}${path}` });
    await waitForJobStatus(api(svc.gw.baseUrl, t.apiKey), `/v1/images/${job.id}`, ['failed']);
    await delivered(job.id, 1);
    const [event] = receiver.at(path).map((r) => verify(secret, r));
    assert.equal(event!.type, 'job.failed');
    assert.equal(event!.data.status, 'failed');
    assert.equal(event!.data.error.code, 'generation_failed');
    assert.equal(await creditsOf(svc.tdb.db, t), before);
  });

  test('cross-workspace: each workspace signs with its own secret and gets only its own events', async () => {
    const other = await createTenant(svc.tdb.db, 1000);
    const otherSecret = await rotate(other);
    const [mine, theirs] = [newPath('mine'), newPath('theirs')];
    const a = await createImage(t, 'ours', { webhook_url: `${receiver.base}${mine}` });
    const b = await createImage(other, 'theirs', { webhook_url: `${receiver.base}${theirs}` });
    await delivered(a.id, 1);
    await delivered(b.id, 1);
    const [ra] = receiver.at(mine);
    const [rb] = receiver.at(theirs);
    assert.equal(verify(secret, ra!).data.id, a.id);
    assert.equal(verify(otherSecret, rb!).data.id, b.id);
    assert.throws(() => verify(otherSecret, ra!), "another workspace's secret does not verify");
    assert.throws(() => verify(secret, rb!));
    assert.equal(receiver.received.filter((r) => r.body.includes(a.id)).length, 1, "a's event went to a's URL only");
    assert.equal((await api(svc.gw.baseUrl, other.apiKey).get(`/v1/images/${a.id}`)).status, 404);
  });

  test('rotation: during the grace period both secrets sign; with no grace the old one stops', async () => {
    const tenant = await createTenant(svc.tdb.db, 1000);
    const first = await rotate(tenant);
    const second = await rotate(tenant, 1);
    const path = newPath('rotating');
    const job = await createImage(tenant, 'rotating', { webhook_url: `${receiver.base}${path}` });
    await delivered(job.id, 1);
    const [r] = receiver.at(path);
    assert.equal(r!.headers['webhook-signature']!.split(' ').length, 2);
    assert.equal(verify(first, r!).data.id, job.id);
    assert.equal(verify(second, r!).data.id, job.id);

    const third = await rotate(tenant, 0);
    const path2 = newPath('rotated');
    const job2 = await createImage(tenant, 'rotated', { webhook_url: `${receiver.base}${path2}` });
    await delivered(job2.id, 1);
    const [r2] = receiver.at(path2);
    assert.equal(r2!.headers['webhook-signature']!.split(' ').length, 1);
    assert.equal(verify(third, r2!).data.id, job2.id);
    assert.throws(() => verify(first, r2!));
    assert.throws(() => verify(second, r2!));
  });

  test('an operator Reset of a failed job delivers what the new run does, once each, with new webhook-ids', async () => {
    // Its own task queues, polled only once the job's input is gone (as in the operators suite).
    const own = testConfig(svc.tdb.url, { ...overrides, RECONCILE_INTERVAL_MS: '3600000' });
    const ogw = await startGateway(own, svc.tdb.db);
    let oworkers: Workers | undefined;
    try {
      const path = newPath('reset');
      const client = api(ogw.baseUrl, t.apiKey);
      const startFrame = await insertUpload(svc.tdb.db, ogw.storage, t, 'image');
      const created = await client.post('/v1/videos/generate', {
        project_id: t.projectId,
        prompt: 'a kite over the dunes',
        model: 'seedance-1.5',
        aspect_ratio: '9:16',
        duration: 4,
        resolution: '480p',
        start_frame_file_id: startFrame,
        webhook_url: `${receiver.base}${path}`,
        webhook_events: ['generating', 'completed', 'failed'],
      });
      assert.equal(created.status, 200, created.text);
      const id = created.body.data.id as string;
      await svc.tdb.db.updateTable('file_uploads').set({ status: 'failed' }).where('id', '=', startFrame).execute();
      oworkers = await startWorkers(own, svc.tdb.db);
      await waitForJobStatus(client, `/v1/videos/${id}`, ['failed']);
      await delivered(id, 2);

      await svc.tdb.db.updateTable('file_uploads').set({ status: 'completed' }).where('id', '=', startFrame).execute();
      const handle = ogw.client.workflow.getHandle(id);
      const { runId } = await handle.describe();
      const firstTaskCompleted = (await handle.fetchHistory()).events?.find((e) => e.workflowTaskCompletedEventAttributes);
      await ogw.client.workflowService.resetWorkflowExecution({
        namespace: own.TEMPORAL_NAMESPACE,
        workflowExecution: { workflowId: id, runId },
        workflowTaskFinishEventId: firstTaskCompleted!.eventId,
        requestId: randomUUID(),
        reason: 'operator: start frame restored',
      });
      await waitForJobStatus(client, `/v1/videos/${id}`, ['completed']);
      await delivered(id, 4);
      const got = receiver.at(path);
      assert.deepEqual(got.map((r) => verify(secret, r).type).sort(), ['job.completed', 'job.failed', 'job.generating', 'job.generating']);
      assert.equal(new Set(got.map((r) => r.headers['webhook-id'])).size, 4, 'one delivery per event, each its own webhook-id');
    } finally {
      await oworkers?.stop();
      await ogw.close();
    }
  });

  test('bad webhook fields answer 400 and charge nothing', async () => {
    const noSecret = await createTenant(svc.tdb.db, 1000);
    const before = await creditsOf(svc.tdb.db, t);
    const cases: Array<[Tenant, Record<string, unknown>, RegExp]> = [
      [t, { webhook_url: 'http://hooks.example.com/x' }, /webhook_url: only https URLs are allowed/],
      [t, { webhook_url: 'https://10.0.0.1/x' }, /webhook_url: the address is not public/],
      [t, { webhook_url: 'https://hooks.example.com:8443/x' }, /webhook_url: only the default https port/],
      [t, { webhook_url: 'not a url' }, /webhook_url/],
      // Refused by the schema the document publishes, as the server refuses it.
      [t, { webhook_url: '' }, /webhook_url/],
      [t, { webhook_url: 'https://user:pw@hooks.example.com/x' }, /webhook_url/],
      [t, { webhook_url: 'http://localhost:9/x' }, /webhook_url/],
      [t, { webhook_events: ['completed'] }, /webhook_events: needs webhook_url/],
      [t, { webhook_url: `${receiver.base}/x`, webhook_events: ['done'] }, /webhook_events/],
      [t, { webhook_url: `${receiver.base}/x`, webhook_events: [] }, /webhook_events/],
      [noSecret, { webhook_url: `${receiver.base}/x` }, /no webhook signing secret/],
    ];
    for (const [tenant, fields, message] of cases) {
      const r = await api(svc.gw.baseUrl, tenant.apiKey).post('/v1/images/generate', {
        project_id: tenant.projectId,
        prompt: 'x',
        model: 'nano-banana-2',
        aspect_ratio: '1:1',
        count: 1,
        ...fields,
      });
      assert.equal(r.status, 400, `${JSON.stringify(fields)}: ${r.text}`);
      assert.equal(r.body.error.code, 'invalid_request');
      assert.match(r.body.error.message, message);
    }
    assert.equal(await creditsOf(svc.tdb.db, t), before);
  });

  test('every create endpoint takes the fields, the record shows them, and a cancel delivers job.failed', async () => {
    const path = newPath('kinds');
    const url = `${receiver.base}${path}`;
    const client = api(svc.gw.baseUrl, t.apiKey);
    const video = await client.post('/v1/videos/generate', {
      project_id: t.projectId,
      prompt: 'waves',
      model: 'veo-3.1',
      webhook_url: url,
      webhook_events: ['failed'],
    });
    assert.equal(video.status, 200, video.text);
    assert.equal(video.body.data.webhook_url, url);
    assert.deepEqual(video.body.data.webhook_events, ['failed']);
    const voiceId = await insertVoice(svc.tdb.db);
    const actorId = await insertActor(svc.tdb.db, svc.gw.storage, { defaultVoiceId: voiceId });
    const talking = await client.post('/v1/talking-actors/generate', {
      project_id: t.projectId,
      actor_id: actorId,
      script: 'hello',
      webhook_url: url,
      webhook_events: ['failed'],
    });
    assert.equal(talking.status, 200, talking.text);
    const got = (await client.get(`/v1/talking-actors/${talking.body.data.id}`)).body.data;
    assert.equal(got.webhook_url, url);
    const replace = await client.post('/v1/replace-actors/generations', {
      project_id: t.projectId,
      image_url: 'https://example.com/a.png',
      video_url: 'https://example.com/a.mp4',
      webhook_url: 'http://example.com/',
    });
    assert.equal(replace.status, 400);
    assert.match(replace.body.error.message, /webhook_url/);
    // Canceled through the API: the cancel's own status move emits the event.
    for (const p of [`/v1/videos/${video.body.data.id}/cancel`, `/v1/talking-actors/${talking.body.data.id}/cancel`])
      assert.equal((await client.post(p)).status, 200);
    await delivered(video.body.data.id, 1);
    await delivered(talking.body.data.id, 1);
    const failed = receiver.at(path).map((r) => verify(secret, r));
    assert.deepEqual(
      failed.map((e) => [e.type, e.data.error.code]),
      [
        ['job.failed', 'canceled'],
        ['job.failed', 'canceled'],
      ],
    );
    const plain = await createImage(t, 'no webhook', {});
    assert.equal(plain.webhook_url, null);
    assert.equal(plain.webhook_events, null);
  });
});
