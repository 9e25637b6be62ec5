// The @mediagen/client package against the real gateway, workers, Postgres, Temporal and MinIO:
// every endpoint through its typed method, errors mapped to MediaGenError, waitForJob for each job
// kind (completed and failed, with credits checked), uploads from a path, a stream and a Blob.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MediaGenClient, MediaGenError, jobPaths, operationMethods, type AnyJob } from '@mediagen/client';
import { uploadFile } from '@mediagen/client/node';
import { createTenant, testConfig, type Tenant } from '../support/stack.js';
import { creditsOf, startGateway, startService, type Service } from '../support/services.js';
import { insertActor, insertVoice, probeUrl } from '../support/fixtures.js';
import { makeSampleMedia, startHttpsTestServer, type HttpsTestServer, type SampleMedia } from '../support/https-server.js';

let svc: Service;
let remote: HttpsTestServer;
let media: SampleMedia;
let dir: string;

before(async () => {
  remote = await startHttpsTestServer();
  media = await makeSampleMedia();
  remote.file('/fox.png', media['image/png'], 'image/png');
  svc = await startService({
    LOCAL_RENDER_FAULTS: 'true',
    LOCAL_RENDER_LATENCY_MS: '1500',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
    FETCH_ALLOW_LOOPBACK_ORIGIN: remote.origin,
    FETCH_EXTRA_CA_FILE: remote.caFile,
  });
  dir = await mkdtemp(join(tmpdir(), 'client-test-'));
});

after(async () => {
  await svc?.close();
  await remote?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function clientFor(t: Tenant, opts: { maxRetries?: number } = {}) {
  return new MediaGenClient({ apiKey: t.apiKey, baseUrl: `${svc.gw.baseUrl}/v1`, ...opts });
}

async function rejectsWith(p: Promise<unknown>, expect: { status: number; code: string; message?: RegExp }): Promise<MediaGenError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof MediaGenError, `expected a MediaGenError, got ${String(err)}`);
    assert.equal(err.status, expect.status, err.message);
    assert.equal(err.code, expect.code, err.message);
    if (expect.message) assert.match(err.message, expect.message);
    return err;
  }
  assert.fail(`expected ${expect.status} ${expect.code}`);
}

describe('discovery', () => {
  test('projects, actors and voices list through their typed methods, and paginate follows next_cursor', async () => {
    const t = await createTenant(svc.tdb.db);
    const c = clientFor(t);
    const voiceId = await insertVoice(svc.tdb.db);
    const actorId = await insertActor(svc.tdb.db, svc.gw.storage, { defaultVoiceId: voiceId });

    const projects = await c.projects.list();
    assert.deepEqual(
      projects.data.map((p) => p.id),
      [t.projectId],
    );
    assert.equal(projects.next_cursor, null);

    const actors = await c.actors.list({ limit: 100 });
    const actor = actors.data.find((a) => a.id === actorId);
    assert.ok(actor, 'the inserted actor is listed');
    assert.equal(actor.default_voice_id, voiceId);

    const voices = await c.voices.list();
    assert.ok(voices.data.some((v) => v.id === voiceId));

    const all: string[] = [];
    for await (const a of c.paginate((q) => c.actors.list(q), 1)) all.push(a.id);
    assert.deepEqual(
      all,
      actors.data.map((a) => a.id),
      'one item per page, in the same order',
    );
  });
});

describe('the whole document', () => {
  test('every operation of GET /v1/openapi.json has a client method; health, readiness and the document itself answer', async () => {
    const t = await createTenant(svc.tdb.db);
    const c = clientFor(t);
    const doc = await c.openapi();
    assert.equal(doc.openapi, '3.1.0');
    const served: string[] = [];
    for (const item of Object.values(doc.paths as Record<string, Record<string, { operationId?: string }>>)) {
      for (const op of Object.values(item)) if (op.operationId) served.push(op.operationId);
    }
    assert.ok(served.length >= 27, `${served.length} operations`);
    const table = operationMethods as Record<string, string>;
    for (const id of served) {
      assert.ok(table[id], `${id} has no client method: add it to operationMethods`);
      const fn = table[id].split('.').reduce<any>((o, k) => o?.[k], c);
      assert.equal(typeof fn, 'function', `${id} → ${table[id]} is a method of the client`);
    }
    assert.deepEqual(await c.health(), { status: 'ok' });
    const ready = await c.ready();
    assert.equal(ready.status, 'ready');
    assert.ok(Object.values(ready.checks).every((v) => v === 'ok'));
  });

  test('models and job lists: GET /v1/models and GET /v1/jobs (and per kind), typed from the document', async () => {
    const t = await createTenant(svc.tdb.db);
    const c = clientFor(t);
    const { data } = await c.models.list();
    const byKind = (kind: string) => data.filter((m) => m.kind === kind).map((m) => m.name);
    assert.ok(byKind('image').includes('nano-banana-2'));
    assert.ok(byKind('video').includes('kling-2.6'));
    assert.deepEqual(byKind('talking_actor'), ['talking-actor', 'talking-actor-v3']);
    assert.equal(byKind('replace_actor').length, 1);
    // GET /v1/queue: one entry per public model and priority.
    const queue = await c.queue.get({ model: 'nano-banana-2' });
    assert.deepEqual(
      queue.data.map((e) => [e.model, e.priority]),
      ['high', 'normal', 'low'].map((p) => ['nano-banana-2', p]),
    );
    assert.equal((await c.queue.get()).data.length, 3 * data.length);
    const job = await c.images.generate({ project_id: t.projectId, prompt: 'listed', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
    const all = await c.jobs.list({ limit: 10 });
    assert.deepEqual([all.data[0]?.id, all.data[0]?.kind], [job.id, 'image']);
    const images = await c.images.list({ project_id: t.projectId });
    assert.deepEqual(
      images.data.map((j) => j.id),
      [job.id],
    );
    assert.deepEqual((await c.videos.list()).data, []);
    const quote = await c.images.quote({ project_id: t.projectId, prompt: 'priced', model: 'nano-banana-2', aspect_ratio: '1:1', count: 3 });
    assert.equal(quote.price, 12);
    assert.equal(typeof quote.sufficient, 'boolean');
    // priority on a create: low is quoted and charged with the model's discount, and shown on the record.
    const nano = data.find((m) => m.name === 'nano-banana-2')!;
    assert.ok(nano.price.low_priority_discount > 0);
    const lowQuote = await c.images.quote({ project_id: t.projectId, prompt: 'cheap', model: 'nano-banana-2', aspect_ratio: '1:1', count: 3, priority: 'low' });
    assert.ok(lowQuote.price < 12);
    const low = await c.images.generate({ project_id: t.projectId, prompt: 'cheap', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1, priority: 'low' });
    assert.deepEqual([low.priority, job.priority], ['low', 'normal']);
    assert.deepEqual(
      (await c.jobs.list({ priority: 'low' })).data.map((j) => j.id),
      [low.id],
    );
  });
});

describe('rate limits', () => {
  test('a 429 is retried after retry_after_ms up to maxRetries', async () => {
    // A gateway of its own with two polls per 3 s window (the limiter's state is in the suite's database).
    const small = await startGateway(testConfig(svc.tdb.url, { RATE_LIMIT_POLL_PER_MIN: '2', RATE_LIMIT_WINDOW_MS: '3000' }), svc.tdb.db);
    try {
      const t = await createTenant(svc.tdb.db);
      const answers: number[] = [];
      const counting: typeof fetch = async (input, init) => {
        const res = await fetch(input, init);
        answers.push(res.status);
        return res;
      };
      const patient = new MediaGenClient({ apiKey: t.apiKey, baseUrl: small.baseUrl, maxRetries: 3, fetch: counting });
      for (let i = 0; i < 3; i++) assert.equal((await patient.projects.list()).data[0]?.id, t.projectId);
      assert.ok(answers.includes(429), `the third call was limited: ${answers.join(' ')}`);
      assert.equal(answers.at(-1), 200, 'and then retried until admitted');
      assert.equal(answers.filter((s) => s === 200).length, 3);
    } finally {
      await small.close();
    }
  });

  test('past maxRetries a 429 is a MediaGenError with retryAfterMs', async () => {
    // A full 60 s window: the third call is refused however slow the machine is.
    const small = await startGateway(testConfig(svc.tdb.url, { RATE_LIMIT_POLL_PER_MIN: '2' }), svc.tdb.db);
    try {
      const t = await createTenant(svc.tdb.db);
      const impatient = new MediaGenClient({ apiKey: t.apiKey, baseUrl: small.baseUrl, maxRetries: 0 });
      await impatient.projects.list();
      await impatient.projects.list();
      const err = await rejectsWith(impatient.projects.list(), { status: 429, code: 'rate_limited' });
      assert.ok(err.retryAfterMs !== null && err.retryAfterMs > 0 && err.retryAfterMs <= 60_000, `retryAfterMs ${err.retryAfterMs}`);
      assert.match(err.requestId ?? '', /\S/);
    } finally {
      await small.close();
    }
  });
});

describe('errors', () => {
  test('401, 400, 402, 403, 404 and 409 answers become MediaGenError with status, code, message and request id', async () => {
    const t = await createTenant(svc.tdb.db, 3);
    const other = await createTenant(svc.tdb.db);
    const c = clientFor(t);

    const bad = new MediaGenClient({ apiKey: 'mg_live_nope_nope', baseUrl: svc.gw.baseUrl });
    const unauthorized = await rejectsWith(bad.projects.list(), { status: 401, code: 'unauthorized' });
    assert.match(unauthorized.requestId ?? '', /\S/, 'the gateway request id is kept');

    await rejectsWith(c.images.generate({ project_id: t.projectId, prompt: 'x', model: 'nano-banana-2', aspect_ratio: '1:1', count: 9 }), {
      status: 400,
      code: 'invalid_request',
    });
    await rejectsWith(c.images.generate({ project_id: t.projectId, prompt: 'x', model: 'dall-e' as 'nano-banana-2', aspect_ratio: '1:1', count: 1 }), {
      status: 400,
      code: 'invalid_model',
    });
    await rejectsWith(c.images.generate({ project_id: t.projectId, prompt: 'x', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 }), {
      status: 402,
      code: 'insufficient_credits',
      message: /requires \d+ credits/,
    });
    assert.equal(await creditsOf(svc.tdb.db, t), 3, 'a refused create charges nothing');
    await rejectsWith(c.images.generate({ project_id: other.projectId, prompt: 'x', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 }), {
      status: 403,
      code: 'forbidden',
    });
    await rejectsWith(c.images.get('img_doesnotexist'), { status: 404, code: 'not_found' });
    await rejectsWith(c.talkingActors.generate({ project_id: t.projectId, actor_id: 'actor_missing', script: 'hi' }), { status: 404, code: 'not_found' });
    assert.equal(await creditsOf(svc.tdb.db, t), 3);
  });

  test('the URL of a job still in flight is 409 not_ready with the job status in the body', async () => {
    const t = await createTenant(svc.tdb.db);
    const c = clientFor(t);
    const job = await c.images.generate({ project_id: t.projectId, prompt: 'slow fox', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
    const err = await rejectsWith(c.images.url(job.id), { status: 409, code: 'not_ready' });
    assert.ok(['pending', 'generating'].includes((err.body as { status: string }).status));
    await c.waitForJob(job);
  });

  test('an unreachable gateway is a network_error, not an unhandled fetch failure', async () => {
    const c = new MediaGenClient({ apiKey: 'k', baseUrl: 'http://127.0.0.1:9' });
    await rejectsWith(c.projects.list(), { status: 0, code: 'network_error' });
  });
});

describe('uploads', () => {
  test('uploadFile takes a path, a stream or a Blob; uploadFromUrl stores a remote file; each is a typed file upload', async () => {
    const t = await createTenant(svc.tdb.db);
    const c = clientFor(t);
    const path = join(dir, 'fox.png');
    await writeFile(path, media['image/png']);

    const fromPath = await uploadFile(c, path, { projectId: t.projectId });
    assert.deepEqual([fromPath.name, fromPath.file_type, fromPath.mime_type, fromPath.file_size], ['fox.png', 'image', 'image/png', media['image/png'].length]);
    const fromStream = await uploadFile(c, createReadStream(path), { projectId: t.projectId, filename: 'stream.png' });
    assert.equal(fromStream.file_size, media['image/png'].length);
    const fromBlob = await c.uploadFile(new Blob([media['video/mp4']]), { projectId: t.projectId, filename: 'clip.mp4' });
    assert.deepEqual([fromBlob.file_type, fromBlob.mime_type], ['video', 'video/mp4']);
    assert.equal(new Set([fromPath.id, fromStream.id, fromBlob.id]).size, 3);

    const stored = await probeUrl(fromPath.path);
    assert.deepEqual(stored.bytes, media['image/png'], 'the stored bytes are the file');

    const fromUrl = await c.uploadFromUrl(`${remote.origin}/fox.png`, { projectId: t.projectId });
    assert.deepEqual([fromUrl.file_type, fromUrl.mime_type, fromUrl.file_size], ['image', 'image/png', media['image/png'].length]);

    await rejectsWith(uploadFile(c, join(dir, 'missing.png'), { projectId: t.projectId }), { status: 0, code: 'file_not_found' });
    await rejectsWith(c.uploadFile(new Blob(['not media']), { projectId: t.projectId, filename: 'a.txt' }), { status: 400, code: 'invalid_request' });
  });

  test('direct uploads: uploadDirect sends the bytes to storage and completes; uploads.create/complete/get are typed', async () => {
    const t = await createTenant(svc.tdb.db);
    const c = clientFor(t);
    const path = join(dir, 'direct.mp4');
    await writeFile(path, media['video/mp4']);

    const fromPath = await uploadFile(c, path, { projectId: t.projectId, direct: true });
    assert.deepEqual(
      [fromPath.name, fromPath.file_type, fromPath.mime_type, fromPath.file_size],
      ['direct.mp4', 'video', 'video/mp4', media['video/mp4'].length],
    );
    assert.equal((await c.uploads.get(fromPath.id)).status, 'completed');
    assert.deepEqual((await probeUrl(fromPath.path)).bytes, media['video/mp4'], 'the stored bytes are the file');

    // Step by step: pending until complete.
    const created = await c.uploads.create({ project_id: t.projectId, name: 'x.png', mime_type: 'image/png', size: media['image/png'].length });
    assert.equal(created.status, 'pending');
    assert.equal(created.upload.method, 'POST');
    assert.equal((await c.uploads.get(created.id)).status, 'pending');
    await rejectsWith(c.uploads.complete(created.id), { status: 409, code: 'not_ready', message: /no file has been sent/ });

    // Bytes that are not what they claim: storage takes them (type and size match), completion refuses.
    await rejectsWith(c.uploadDirect(new Blob([Buffer.alloc(64, 1)], { type: 'image/png' }), { projectId: t.projectId, filename: 'fake.png' }), {
      status: 400,
      code: 'invalid_request',
    });
    await rejectsWith(c.uploadDirect(new Blob(['x']), { projectId: t.projectId, filename: 'notes.txt' }), { status: 0, code: 'unknown_mime_type' });
    await rejectsWith(c.uploads.get('file_doesnotexist'), { status: 404, code: 'not_found' });
  });
});

/** A tenant with 1000 credits, its client, an actor (with a voice) and an uploaded image and video: the inputs of every job kind. */
async function tenantWithInputs() {
  const t = await createTenant(svc.tdb.db, 1000);
  const c = clientFor(t);
  const voiceId = await insertVoice(svc.tdb.db);
  const actorId = await insertActor(svc.tdb.db, svc.gw.storage, { defaultVoiceId: voiceId });
  const image = await c.uploadFile(new Blob([media['image/png']]), { projectId: t.projectId, filename: 'c.png' });
  const video = await c.uploadFile(new Blob([media['video/mp4']]), { projectId: t.projectId, filename: 'm.mp4' });
  return { t, c, actorId, image, video };
}

describe('waitForJob', () => {
  test('each kind completes: progress is reported in order and the output URLs are returned', async () => {
    const { t, c, actorId, image, video } = await tenantWithInputs();

    const jobs = [
      await c.images.generate({ project_id: t.projectId, prompt: 'a red fox', model: 'nano-banana-2', aspect_ratio: '16:9', count: 2 }),
      await c.videos.generate({ project_id: t.projectId, prompt: 'waves', model: 'kling-2.6' }),
      await c.replaceActors.generate({ project_id: t.projectId, image_file_id: image.id, video_file_id: video.id, duration: 3 }),
      await c.talkingActors.generate({ project_id: t.projectId, actor_id: actorId, script: 'Hello there.' }),
    ];
    assert.deepEqual(
      jobs.map((j) => j.kind),
      ['images', 'videos', 'replace-actors', 'talking-actors'],
    );
    assert.ok(jobs.every((j) => j.status === 'pending'));

    // A client whose requests are counted: streams where the gateway has them, polls otherwise.
    const paths: string[] = [];
    const counted = new MediaGenClient({
      apiKey: t.apiKey,
      baseUrl: svc.gw.baseUrl,
      fetch: (input, init) => (paths.push(new URL(String(input)).pathname), fetch(input, init)),
    });
    const results = await Promise.all(
      jobs.map(async (job, i) => {
        const seen: AnyJob[] = [];
        // Videos and talking actors poll (events: false), so both ways run against the real gateway.
        const r = await counted.waitForJob(job, { onProgress: (j) => seen.push(j), pollIntervalMs: 100, maxPollIntervalMs: 400, events: i % 2 === 0 });
        return { job, r, seen };
      }),
    );
    for (const { job, r, seen } of results) {
      assert.equal(r.job.id, job.id);
      assert.equal(r.job.status, 'completed');
      assert.ok(r.urls.length >= 1 && r.url === r.urls[0]);
      const order = ['pending', 'generating', 'completed'];
      const statuses = seen.map((s) => order.indexOf(s.status));
      assert.deepEqual(statuses, [...statuses].sort(), `${job.kind}: statuses only move forward`);
      assert.equal(seen.at(-1)?.status, 'completed');
      assert.ok(
        seen.some((s) => s.progress?.phase === 'generating'),
        `${job.kind}: the provider phase was reported`,
      );
      const out = await probeUrl(r.url);
      assert.equal(out.contentType, job.kind === 'images' ? 'image/png' : 'video/mp4');
    }
    assert.equal(results[0]!.r.urls.length, 2, 'both images of count 2');
    // The event stream where the gateway's document offers it: one status read per job, then only
    // events. Otherwise 404, which waitForJob met above and answered by polling.
    const hasEvents = Object.keys((await c.openapi()).paths as object).includes('/v1/images/{id}/events');
    for (const [i, job] of jobs.entries()) {
      const statusReads = paths.filter((p) => p === `${jobPaths[job.kind].base}/${job.id}`).length;
      const streams = paths.filter((p) => p === `${jobPaths[job.kind].base}/${job.id}/events`).length;
      if (i % 2 === 1) assert.deepEqual([statusReads > 1, streams], [true, 0], `${job.kind}: polled as asked (${statusReads} reads)`);
      // (A stream cut mid-way is reopened with Last-Event-ID: more than one stream, still no polling.)
      else if (hasEvents)
        assert.ok(statusReads === 1 && streams >= 1, `${job.kind}: followed its stream, no polling (${statusReads} reads, ${streams} streams)`);
      else assert.ok(statusReads > 1 && streams <= 1, `${job.kind}: polled (${statusReads} reads, ${streams} stream attempts)`);
    }
    const streamed = (async () => {
      const got: AnyJob[] = [];
      for await (const ev of c.images.events(jobs[0]!.id)) got.push(ev.job);
      return got;
    })();
    if (hasEvents)
      assert.deepEqual(
        (await streamed).map((j) => j.status),
        ['completed'],
        'a finished job: its record, then the end',
      );
    else await rejectsWith(streamed, { status: 404, code: 'not_found' });
    // Fetching a finished job through the kind-agnostic helpers agrees.
    assert.equal((await c.jobs.get(jobs[1]!.id)).status, 'completed');
  });

  test('a failed job rejects with its MediaGenError and refunds; abort stops waiting', async () => {
    const t = await createTenant(svc.tdb.db, 100);
    const c = clientFor(t);
    const job = await c.images.generate({ project_id: t.projectId, prompt: 'doomed [fail:terminal]', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
    const err = await rejectsWith(c.waitForJob(job, { pollIntervalMs: 100 }), { status: 409, code: 'generation_failed', message: /failed/ });
    assert.equal((err.body as AnyJob).status, 'failed');
    assert.equal(await creditsOf(svc.tdb.db, t), 100, 'the failed job was refunded');

    const slow = await c.images.generate({ project_id: t.projectId, prompt: 'slow', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
    const abort = new AbortController();
    const waiting = c.waitForJob(slow, { signal: abort.signal, onProgress: () => abort.abort(new Error('enough')) });
    await assert.rejects(waiting, /enough/);
    const canceled = await c.images.cancel(slow.id);
    assert.equal(canceled.id, slow.id);
    await rejectsWith(c.waitForJob(slow, { pollIntervalMs: 100 }), { status: 409, code: 'canceled' });
    assert.equal(await creditsOf(svc.tdb.db, t), 100, 'the canceled job was refunded too');
  });

  test('cancel of every other kind through its typed method: failed with code canceled, refunded; a finished job is not_cancelable', async () => {
    const { t, c, actorId, image, video } = await tenantWithInputs();
    const video1 = await c.videos.generate({ project_id: t.projectId, prompt: 'slow waves', model: 'kling-2.6' });
    const replace = await c.replaceActors.generate({ project_id: t.projectId, image_file_id: image.id, video_file_id: video.id, duration: 3 });
    const talking = await c.talkingActors.generate({ project_id: t.projectId, actor_id: actorId, script: 'Hello.' });
    const canceled = [await c.videos.cancel(video1.id), await c.replaceActors.cancel(replace.id), await c.talkingActors.cancel(talking.id)];
    assert.deepEqual(
      canceled.map((j) => j.id),
      [video1.id, replace.id, talking.id],
    );
    for (const job of [video1, replace, talking]) {
      const err = await rejectsWith(c.waitForJob(job, { pollIntervalMs: 100 }), { status: 409, code: 'canceled' });
      assert.equal((err.body as AnyJob).status, 'failed');
    }
    assert.equal(await creditsOf(svc.tdb.db, t), 1000, 'every canceled job was refunded');
    await rejectsWith(c.videos.cancel(video1.id), { status: 409, code: 'not_cancelable' });
  });
});
