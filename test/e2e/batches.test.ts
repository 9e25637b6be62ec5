// Batches on the real stack, over HTTP (gateway, the batch's parent workflow and its items' job
// workflows on Temporal, Postgres, MinIO, the local renderer, the webhook dispatcher and delivery):
// a 200-item batch over three kinds completes with one signed batch.completed and a manifest of 200
// rows matching the jobs (JSON, JSON Lines and CSV), charged exactly the items' prices at priority
// low; its one failing item is refunded alone, and a retry runs that item alone again; a cancel
// mid-way charges only the items already started; a create is validated whole, naming the item; a
// pipeline item runs its steps at priority low, fails at a step it cannot pay for, and a retry
// resumes it from that step (the step that completed never paid again), outside the workspace's
// limit on pipelines created directly.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { verifyWebhook } from '@mediagen/client/webhooks';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, assertApiError, startService, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { insertActor, insertVoice } from '../support/fixtures.js';
import { ledgerCharges } from '../support/ledger.js';
import { Receiver } from '../support/webhook-receiver.js';
import { rotateWebhookSecret } from '../../db/repos/webhooks.js';
import { adjustCredits } from '../../db/repos/workspaces.js';
import { secretsEncryptionKey } from '../../shared/webhooks/signing.js';
import type { Config } from '../../shared/config.js';
import { batchEventDataSchema } from '../../shared/batches.js';

let suite: Service;
let tdb: TestDatabase;
let config: Config;
let gw: Gateway;
const receiver = new Receiver();

before(async () => {
  suite = await startService({
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    WEBHOOK_TIMEOUT_MS: '1000',
    WEBHOOK_RETRY_INITIAL_MS: '100',
    WEBHOOK_RETRY_MAX_INTERVAL_MS: '300',
    LOCAL_RENDER_FAULTS: 'true',
    BATCH_START_PER_SECOND: '20',
    // One pipeline created through POST /v1/pipelines at a time: a batch's pipeline items are not counted.
    PIPELINE_MAX_ACTIVE: '1',
    RATE_LIMIT_GENERATE_PER_MIN: '10000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
  });
  ({ tdb, config, gw } = suite);
  await receiver.start();
});

after(async () => {
  await receiver.close();
  await suite?.close();
});

const signingSecret = async (t: Tenant) =>
  (await rotateWebhookSecret(tdb.db, { workspaceId: t.workspaceId, actorEmail: t.ownerEmail, graceSeconds: 0, key: secretsEncryptionKey(config) })).secret;

const image = (customId: string, prompt = `a lighthouse ${customId}`) => ({
  custom_id: customId,
  kind: 'image',
  body: { prompt, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 },
});
const video = (customId: string) => ({
  custom_id: customId,
  kind: 'video',
  body: { prompt: `a slow pan ${customId}`, model: 'seedance-1.5', aspect_ratio: '16:9', resolution: '480p', duration: 4 },
});
/** A pipeline item: a still, then a clip from it. */
const stillThenClip = (customId: string, clipPrompt = `a slow pan ${customId}`) => ({
  custom_id: customId,
  kind: 'pipeline',
  body: {
    steps: [
      { id: 'still', kind: 'image', body: { prompt: `a lighthouse ${customId}`, model: 'nano-banana-2', aspect_ratio: '16:9', count: 1 } },
      {
        id: 'clip',
        kind: 'video',
        body: { prompt: clipPrompt, model: 'seedance-1.5', resolution: '480p', duration: 4, start_frame_file_id: { from: 'still', output: 0 } },
      },
    ],
    tags: ['promo'],
  },
});
const talking = (customId: string, actorId: string, voiceId: string) => ({
  custom_id: customId,
  kind: 'talking_actor',
  body: { actor_id: actorId, voice_id: voiceId, script: `Hello from ${customId}.` },
});

async function batchOf(t: Tenant, id: string) {
  const r = await api(gw.baseUrl, t.apiKey).get(`/v1/batches/${id}`);
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

const ended = (t: Tenant, id: string, timeoutMs = 600_000) =>
  waitFor(
    `batch ${id} to end`,
    async () => {
      const b = await batchOf(t, id);
      return b.status !== 'running' ? b : undefined;
    },
    timeoutMs,
    500,
  );

const itemRows = (batchId: string) => tdb.db.selectFrom('batch_items').selectAll().where('batch_id', '=', batchId).orderBy('position').execute();
const creditsOf = async (t: Tenant) =>
  Number((await tdb.db.selectFrom('workspaces').select('credits').where('id', '=', t.workspaceId).executeTakeFirstOrThrow()).credits);

describe('batches', () => {
  test('200 items over three kinds: one batch.completed, a manifest of 200 rows matching the jobs, the items charged their low-priority prices, the failing one refunded alone; a retry runs it alone', async () => {
    const t = await createTenant(tdb.db, 1_000_000);
    const secret = await signingSecret(t);
    const voiceId = await insertVoice(tdb.db);
    const actorId = await insertActor(tdb.db, gw.storage, { defaultVoiceId: voiceId });
    // Mostly images: a video or a talking actor costs the local renderer an ffmpeg run of seconds of
    // CPU, and a few of each show the kinds mix as well as many would.
    const [images, videos, talkings] = [186, 8, 6];
    const items = [
      ...Array.from({ length: images }, (_, i) => (i === 77 ? image(`img-${i}`, 'a storm [fail:terminal]') : image(`img-${i}`))),
      ...Array.from({ length: videos }, (_, i) => video(`vid-${i}`)),
      ...Array.from({ length: talkings }, (_, i) => talking(`talk-${i}`, actorId, voiceId)),
    ];
    const body = { project_id: t.projectId, items, webhook_url: `${receiver.base}/batch` };

    const quote = await api(gw.baseUrl, t.apiKey).post('/v1/batches?dry_run=true', body);
    assert.equal(quote.status, 200, quote.text);
    assert.equal(quote.body.data.items.length, 200);
    // Each item's price is what its kind's own create quotes at priority low.
    for (const [kind, path, item] of [
      ['image', '/v1/images/generate', items[0]!],
      ['video', '/v1/videos/generate', items[images]!],
      ['talking_actor', '/v1/talking-actors/generate', items[images + videos]!],
    ] as const) {
      const single = await api(gw.baseUrl, t.apiKey).post(`${path}?dry_run=true`, { ...item.body, project_id: t.projectId, priority: 'low' });
      assert.equal(single.status, 200, single.text);
      const at = items.indexOf(item);
      assert.equal(quote.body.data.items[at].price, single.body.data.price, `${kind}: the batch quotes its low-priority price`);
    }
    const quoted: number[] = quote.body.data.items.map((i: { price: number }) => i.price);
    assert.equal(
      quote.body.data.price,
      quoted.reduce((a, b) => a + b, 0),
    );
    assert.equal(
      await tdb.db.selectFrom('batches').select('id').where('workspace_id', '=', t.workspaceId).executeTakeFirst(),
      undefined,
      'a dry run writes nothing',
    );

    const before = await creditsOf(t);
    const created = await api(gw.baseUrl, t.apiKey).post('/v1/batches', body);
    assert.equal(created.status, 200, created.text);
    const id = created.body.data.id as string;
    assert.equal(created.body.data.item_count, 200);
    assert.equal(created.body.data.price, quote.body.data.price);

    const done = await ended(t, id);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.counts, { waiting: 0, pending: 0, generating: 0, completed: 199, failed: 1, canceled: 0 });

    const rows = await itemRows(id);
    const jobs = await tdb.db
      .selectFrom('jobs')
      .selectAll()
      .where(
        'id',
        'in',
        rows.map((r) => r.job_id!),
      )
      .execute();
    const byId = new Map(jobs.map((j) => [j.id, j]));
    assert.equal(jobs.length, 200, 'one job per item');
    for (const [i, r] of rows.entries()) {
      const job = byId.get(r.job_id!)!;
      assert.equal(job.priority, 'low', `${r.custom_id} ran at priority low`);
      assert.equal(job.price, quoted[i], `${r.custom_id} was priced as quoted`);
      const ledger = await ledgerCharges(tdb.db, job.id);
      if (r.custom_id === 'img-77') {
        assert.equal(job.status, 'failed');
        assert.deepEqual(ledger, { charged: job.price, refunded: job.price, net: 0 }, 'the failing item is refunded');
      } else {
        assert.equal(job.status, 'completed', `${r.custom_id} completed`);
        assert.deepEqual(ledger, { charged: job.price, refunded: 0, net: job.price }, `${r.custom_id} is charged its price once`);
      }
    }
    const expected = quoted.reduce((a, b) => a + b, 0) - quoted[77]!;
    assert.equal(done.charged, expected, "the batch's credits are the completed items' prices");
    assert.equal(before - (await creditsOf(t)), expected, 'the workspace paid exactly that');

    // The manifest, in each format, matches the jobs row for row.
    const manifest = await api(gw.baseUrl, t.apiKey).get(`/v1/batches/${id}/manifest`);
    assert.equal(manifest.status, 200, manifest.text);
    assert.equal(manifest.body.data.length, 200);
    for (const [i, m] of (manifest.body.data as any[]).entries()) {
      const job = byId.get(rows[i]!.job_id!)!;
      assert.equal(m.custom_id, rows[i]!.custom_id);
      assert.equal(m.job_id, job.id);
      assert.equal(m.status, job.status);
      assert.equal(m.credits, job.status === 'completed' ? job.price : 0);
      assert.equal(m.output_urls.length, job.status === 'completed' ? (job.outputs ?? []).length : 0);
      if (job.status === 'completed') assert.ok(m.output_urls.length >= 1, `${m.custom_id} lists its outputs`);
    }
    const output = await fetch(manifest.body.data[0].output_urls[0]);
    assert.equal(output.status, 200, 'an output URL serves the media');
    const jsonl = await api(gw.baseUrl, t.apiKey).call('GET', `/v1/batches/${id}/manifest`, undefined, { accept: 'application/jsonl' });
    assert.match(String(jsonl.headers.get('content-type')), /^application\/jsonl/);
    const lines = jsonl.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      lines.map((l) => [l.custom_id, l.job_id, l.status, l.credits]),
      (manifest.body.data as any[]).map((m) => [m.custom_id, m.job_id, m.status, m.credits]),
    );
    const csv = await api(gw.baseUrl, t.apiKey).call('GET', `/v1/batches/${id}/manifest`, undefined, { accept: 'text/csv' });
    assert.match(String(csv.headers.get('content-type')), /^text\/csv/);
    const csvLines = csv.text.trimEnd().split('\r\n');
    assert.equal(csvLines[0], 'custom_id,job_id,status,output_urls,credits,error_code,pipeline_id');
    assert.equal(csvLines.length, 201);
    assert.equal(csvLines[78], `img-77,${rows[77]!.job_id},failed,,0,generation_failed,`);

    // One batch.completed, signed, with the final counts.
    const event = await waitFor('batch.completed delivered', () => receiver.at('/batch')[0], 60_000);
    const parsed = verifyWebhook<any>(secret, event.body, event.headers);
    assert.equal(parsed.type, 'batch.completed');
    batchEventDataSchema.parse(parsed.data); // the body the OpenAPI document's webhooks section describes
    assert.deepEqual(
      [parsed.data.id, parsed.data.status, parsed.data.counts.completed, parsed.data.counts.failed, parsed.data.charged],
      [id, 'completed', 199, 1, expected],
    );
    const outbox = await tdb.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('workspace_id', '=', t.workspaceId)
      .where('type', '=', 'batch.completed')
      .execute();
    assert.equal(outbox.length, 1, 'one batch.completed');

    // Retry: only the failed item runs again, as a new job (it fails again: its prompt says so).
    const retried = await api(gw.baseUrl, t.apiKey).post(`/v1/batches/${id}/retry`);
    assert.equal(retried.status, 200, retried.text);
    const again = await waitFor(
      'the retried batch to end again',
      async () => {
        const b = await batchOf(t, id);
        return b.status === 'completed' && (await itemRows(id))[77]!.attempt === 1 && b.counts.failed === 1 && b.counts.waiting === 0 ? b : undefined;
      },
      120_000,
      300,
    );
    const after = await itemRows(id);
    assert.deepEqual(
      after.filter((r) => r.jobs.length > 1).map((r) => r.custom_id),
      ['img-77'],
      'only the failed item made a second job',
    );
    assert.equal(again.charged, expected, 'its second job was refunded too');
    await waitFor(
      'a second batch.completed',
      async () =>
        (await tdb.db.selectFrom('webhook_deliveries').select('id').where('workspace_id', '=', t.workspaceId).where('type', '=', 'batch.completed').execute())
          .length === 2 || undefined,
      30_000,
    );
    assertApiError(await api(gw.baseUrl, t.apiKey).post(`/v1/batches/${id}/cancel`), 409, 'not_cancelable');
  });

  test('cancel mid-way: the items started are charged, the items not started never are, and the batch ends canceled', async () => {
    const t = await createTenant(tdb.db, 1_000_000);
    const items = Array.from({ length: 120 }, (_, i) => image(`c-${i}`));
    const before = await creditsOf(t);
    const created = await api(gw.baseUrl, t.apiKey).post('/v1/batches', { project_id: t.projectId, items });
    assert.equal(created.status, 200, created.text);
    const id = created.body.data.id as string;
    await waitFor('some items started', async () => ((await batchOf(t, id)).counts.waiting < 120 ? true : undefined), 60_000, 50);
    const canceled = await api(gw.baseUrl, t.apiKey).post(`/v1/batches/${id}/cancel`);
    assert.equal(canceled.status, 200, canceled.text);
    const done = await ended(t, id);
    assert.equal(done.status, 'canceled');
    assert.ok(done.counts.canceled > 0, `items were left unstarted: ${JSON.stringify(done.counts)}`);
    assert.equal(done.counts.completed + done.counts.canceled, 120, JSON.stringify(done.counts));

    const rows = await itemRows(id);
    const started = rows.filter((r) => r.job_id !== null);
    const never = rows.filter((r) => r.status === 'canceled');
    assert.equal(started.length + never.length, 120);
    assert.ok(
      never.every((r) => r.jobs.length === 0 && r.job_id === null),
      'a canceled item never had a job',
    );
    const jobIds = await tdb.db.selectFrom('jobs').select('id').where('workspace_id', '=', t.workspaceId).execute();
    assert.equal(jobIds.length, started.length, 'no job exists for an item not started');
    const charged = started.reduce((n, r) => n + r.price, 0);
    assert.equal(done.charged, charged);
    assert.equal(before - (await creditsOf(t)), charged, 'only the started items were paid');
    assertApiError(await api(gw.baseUrl, t.apiKey).post(`/v1/batches/${id}/cancel`), 409, 'not_cancelable');
    assertApiError(await api(gw.baseUrl, t.apiKey).post(`/v1/batches/${id}/retry`), 409, 'not_resumable');
  });

  test('a create is validated whole: a refusal names the item by index and custom_id, and nothing is written', async () => {
    const t = await createTenant(tdb.db, 1000);
    const other = await createTenant(tdb.db, 1000);
    const post = (body: unknown) => api(gw.baseUrl, t.apiKey).post('/v1/batches', body);
    const cases: [unknown, number, string, RegExp][] = [
      [{ project_id: t.projectId, items: [] }, 400, 'invalid_request', /items/],
      [{ project_id: t.projectId, items: [image('a'), image('a')] }, 400, 'invalid_request', /items\[1\]\.custom_id: "a" is also the custom_id of items\[0\]/],
      [
        { project_id: t.projectId, items: [image('a'), { ...image('b'), body: { ...image('b').body, aspect_ratio: '7:3' } }] },
        400,
        'invalid_request',
        /^items\[1\] \(custom_id "b"\)\.body/,
      ],
      [
        { project_id: t.projectId, items: [image('a'), { ...image('b'), body: { ...image('b').body, model: 'nope' } }] },
        400,
        'invalid_model',
        /^items\[1\] \(custom_id "b"\)\.body/,
      ],
      [
        { project_id: t.projectId, items: [{ ...image('p'), body: { ...image('p').body, priority: 'high' } }] },
        400,
        'invalid_request',
        /priority: every item runs at priority low/,
      ],
      [
        { project_id: t.projectId, items: [image('a'), { custom_id: 'v', kind: 'video', body: { prompt: 'x', model: 'seedance-1.5', duration: 99 } }] },
        400,
        'invalid_request',
        /items\[1\] \(custom_id "v"\)/,
      ],
      [{ project_id: t.projectId, items: [{ custom_id: 'bad id!', kind: 'image', body: {} }] }, 400, 'invalid_request', /items\[0\]\.custom_id/],
      [{ project_id: other.projectId, items: [image('a')] }, 403, 'forbidden', /project/],
    ];
    for (const [body, status, code, message] of cases) {
      const r = await post(body);
      assertApiError(r, status, code);
      assert.match(r.body.error.message, message);
    }
    assertApiError(await api(gw.baseUrl, t.apiKey).get('/v1/batches/bat_unknown'), 404, 'not_found');
    const mine = await post({ project_id: t.projectId, items: [image('one')] });
    assert.equal(mine.status, 200, mine.text);
    assertApiError(await api(gw.baseUrl, other.apiKey).get(`/v1/batches/${mine.body.data.id}`), 404, 'not_found');
    const listed = await api(gw.baseUrl, t.apiKey).get('/v1/batches');
    assert.deepEqual(
      listed.body.data.map((b: { id: string }) => b.id),
      [mine.body.data.id],
      'the list holds the one batch created; refused creates wrote nothing',
    );
    assert.deepEqual((await api(gw.baseUrl, other.apiKey).get('/v1/batches')).body.data, []);
  });

  test('an item the workspace cannot pay for fails alone at its start, refused, never charged', async () => {
    const t = await createTenant(tdb.db, 0);
    const created = await api(gw.baseUrl, t.apiKey).post('/v1/batches', { project_id: t.projectId, items: [image('broke')] });
    assert.equal(created.status, 200, created.text);
    const done = await ended(t, created.body.data.id, 60_000);
    assert.equal(done.status, 'completed');
    assert.equal(done.counts.failed, 1);
    const manifest = await api(gw.baseUrl, t.apiKey).get(`/v1/batches/${done.id}/manifest`);
    assert.deepEqual(
      manifest.body.data.map((m: any) => [m.custom_id, m.job_id, m.status, m.credits, m.error.code]),
      [['broke', null, 'failed', 0, 'insufficient_credits']],
    );
    assert.equal(await creditsOf(t), 0);
  });

  test('pipeline items: each step at priority low, a step it cannot pay for fails the item alone, and a retry resumes it from that step, the completed step never paid again', async () => {
    const t = await createTenant(tdb.db, 1_000_000);
    const items = [stillThenClip('promo'), image('solo')];
    const quote = await api(gw.baseUrl, t.apiKey).post('/v1/batches?dry_run=true', { project_id: t.projectId, items });
    assert.equal(quote.status, 200, quote.text);
    // The pipeline item is priced as POST /v1/pipelines prices its steps, each at priority low.
    const atLow = stillThenClip('promo').body.steps.map((s) => ({ ...s, body: { ...s.body, priority: 'low' } }));
    const direct = await api(gw.baseUrl, t.apiKey).post('/v1/pipelines?dry_run=true', { project_id: t.projectId, steps: atLow });
    assert.equal(direct.status, 200, direct.text);
    const [still, clip] = direct.body.data.steps.map((s: { price: number }) => s.price) as [number, number];
    assert.deepEqual(
      quote.body.data.items.map((i: { price: number }) => i.price),
      [still + clip, quote.body.data.items[1].price],
    );
    const solo = quote.body.data.items[1].price as number;

    // Enough for the image item and the still, one credit short of the clip: the pipeline fails at its second step.
    const poor = await createTenant(tdb.db, solo + still + clip - 1);
    const created = await api(gw.baseUrl, poor.apiKey).post('/v1/batches', { project_id: poor.projectId, items });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.data.price, solo + still + clip);
    const id = created.body.data.id as string;
    const first = await ended(poor, id, 300_000);
    assert.equal(first.status, 'completed');
    assert.deepEqual([first.counts.completed, first.counts.failed], [1, 1], JSON.stringify(first.counts));
    const [promo] = await itemRows(id);
    assert.ok(promo!.pipeline_id, 'the pipeline item has its pipeline');
    const pipeline = await api(gw.baseUrl, poor.apiKey).get(`/v1/pipelines/${promo!.pipeline_id}`);
    assert.equal(pipeline.status, 200, pipeline.text);
    assert.equal(pipeline.body.data.status, 'failed');
    assert.equal(pipeline.body.data.error.code, 'insufficient_credits');
    assert.deepEqual(pipeline.body.data.tags, ['promo'], "the item's labels are its pipeline's");
    const stillJob = pipeline.body.data.steps[0].job_id as string;
    const stillRow = await tdb.db.selectFrom('jobs').selectAll().where('id', '=', stillJob).executeTakeFirstOrThrow();
    assert.equal(stillRow.priority, 'low', 'a step runs at the batch priority');
    assert.equal(stillRow.price, still);
    let manifest = await api(gw.baseUrl, poor.apiKey).get(`/v1/batches/${id}/manifest`);
    assert.deepEqual(
      manifest.body.data.map((m: any) => [m.custom_id, m.job_id, m.pipeline_id, m.status, m.credits, m.error?.code ?? null, m.output_urls.length]),
      [
        ['promo', null, promo!.pipeline_id, 'failed', still, 'insufficient_credits', 0],
        ['solo', (await itemRows(id))[1]!.job_id, null, 'completed', solo, null, 1],
      ],
    );
    assert.equal(await creditsOf(poor), clip - 1, 'the image item and the still were paid, the clip was not');

    // Credits added; the retry resumes the pipeline at the clip.
    await adjustCredits(tdb.db, poor.workspaceId, 1, 'the clip');
    const retried = await api(gw.baseUrl, poor.apiKey).post(`/v1/batches/${id}/retry`);
    assert.equal(retried.status, 200, retried.text);
    const second = await waitFor(
      'the retried batch to complete',
      async () => {
        const b = await batchOf(poor, id);
        return b.status === 'completed' && b.counts.completed === 2 ? b : undefined;
      },
      300_000,
      500,
    );
    assert.equal(second.charged, solo + still + clip, 'every step and item paid once');
    const resumed = (await api(gw.baseUrl, poor.apiKey).get(`/v1/pipelines/${promo!.pipeline_id}`)).body.data;
    assert.equal(resumed.status, 'completed');
    assert.deepEqual(resumed.steps[0].jobs, [stillJob], 'the still ran once');
    // Its first attempt was refused at its charge, before any job was made; the resume's is attempt 1.
    assert.deepEqual(resumed.steps[1].jobs.length, 1);
    assert.match(resumed.steps[1].jobs[0], /-s1-a1$/, 'the clip ran as its second attempt');
    manifest = await api(gw.baseUrl, poor.apiKey).get(`/v1/batches/${id}/manifest`);
    const row = manifest.body.data[0];
    assert.deepEqual([row.status, row.credits, row.error, row.pipeline_id], ['completed', still + clip, null, promo!.pipeline_id]);
    assert.equal(row.output_urls.length, 1, "the manifest gives the pipeline's last step's output");
    const media = await fetch(row.output_urls[0]);
    assert.equal(media.status, 200);
    assert.match(String(media.headers.get('content-type')), /^video\//);
    assert.equal(await creditsOf(poor), 0);
    const jobIds = await tdb.db.selectFrom('jobs').select('id').where('workspace_id', '=', poor.workspaceId).execute();
    const nets = await Promise.all(jobIds.map(async (j) => (await ledgerCharges(tdb.db, j.id)).net));
    assert.equal(
      nets.reduce((a, b) => a + b, 0),
      solo + still + clip,
      "the jobs' ledger nets to the prices",
    );
  });

  test("a batch's pipeline items are not counted in the workspace's limit on pipelines created directly", async () => {
    const t = await createTenant(tdb.db, 1_000_000);
    const created = await api(gw.baseUrl, t.apiKey).post('/v1/batches', {
      project_id: t.projectId,
      items: [stillThenClip('held', 'a slow pan [latency:15000]')],
    });
    assert.equal(created.status, 200, created.text);
    const id = created.body.data.id as string;
    const pipelineId = await waitFor(
      "the item's pipeline to run",
      async () => {
        const [row] = await itemRows(id);
        const p = row?.pipeline_id ? await tdb.db.selectFrom('pipelines').selectAll().where('id', '=', row.pipeline_id).executeTakeFirst() : undefined;
        return p?.status === 'running' ? p.id : undefined;
      },
      120_000,
      100,
    );
    const steps = [
      { id: 'still', kind: 'image', body: { prompt: 'a held lighthouse [latency:15000]', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 } },
    ];
    const own = await api(gw.baseUrl, t.apiKey).post('/v1/pipelines', { project_id: t.projectId, steps });
    assert.equal(own.status, 200, `PIPELINE_MAX_ACTIVE is 1 and the batch's pipeline is not counted: ${own.text}`);
    assertApiError(await api(gw.baseUrl, t.apiKey).post('/v1/pipelines', { project_id: t.projectId, steps }), 429, 'rate_limited');
    const batchPipeline = await tdb.db.selectFrom('pipelines').selectAll().where('id', '=', pipelineId).executeTakeFirstOrThrow();
    assert.notEqual(batchPipeline.status, 'completed', "the batch's pipeline was still running when the workspace's own pipeline was created");
    const done = await ended(t, id, 300_000);
    assert.deepEqual([done.status, done.counts.completed], ['completed', 1]);
  });

  test('a pipeline item is validated as a pipeline create, its refusals naming the item and the step', async () => {
    const t = await createTenant(tdb.db, 1000);
    const post = (body: unknown) => api(gw.baseUrl, t.apiKey).post('/v1/batches', body);
    const item = stillThenClip('pl');
    const withSteps = (steps: unknown[]) => ({ project_id: t.projectId, items: [image('a'), { ...item, body: { steps } }] });
    const [s0, s1] = item.body.steps;
    const cases: [unknown, number, string, RegExp][] = [
      [
        withSteps([s1, s0]),
        400,
        'invalid_request',
        /^items\[1\] \(custom_id "pl"\)\.body\.steps\[0\]\.body\.start_frame_file_id: step "still" does not run before/,
      ],
      [
        withSteps([{ ...s0, body: { ...s0!.body, priority: 'high' } }]),
        400,
        'invalid_request',
        /^items\[1\] \(custom_id "pl"\)\.body\.steps\[0\]\.body\.priority: every item runs at priority low/,
      ],
      [withSteps([{ ...s0, body: { ...s0!.body, model: 'nope' } }]), 400, 'invalid_model', /^items\[1\] \(custom_id "pl"\)\.body\.steps\[0\]\.body/],
      [
        withSteps([s0, { ...s1, body: { ...s1!.body, duration: 99 } }]),
        400,
        'invalid_request',
        /^items\[1\] \(custom_id "pl"\)\.body\.steps\[1\]\.body\.duration/,
      ],
      [
        withSteps([s0, { ...s1, id: 'still' }]),
        400,
        'invalid_request',
        /^items\[1\] \(custom_id "pl"\)\.body\.steps\[1\]\.id: step id "still" is used by an earlier step/,
      ],
      [{ project_id: t.projectId, items: [{ ...item, body: { ...item.body, webhook_url: 'https://example.com/h' } }] }, 400, 'invalid_request', /webhook_url/],
      [withSteps([]), 400, 'invalid_request', /^items\[1\] \(custom_id "pl"\)\.body\.steps/],
    ];
    for (const [body, status, code, message] of cases) {
      const r = await post(body);
      assertApiError(r, status, code);
      assert.match(r.body.error.message, message);
    }
    assert.equal(
      await tdb.db.selectFrom('batches').select('id').where('workspace_id', '=', t.workspaceId).executeTakeFirst(),
      undefined,
      'nothing was written',
    );
    assert.equal(await tdb.db.selectFrom('pipelines').select('id').where('workspace_id', '=', t.workspaceId).executeTakeFirst(), undefined);
  });
});
