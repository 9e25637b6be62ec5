// End to end over HTTP: the real gateway, real Temporal workers, Postgres and MinIO, with the local
// renderer as provider. Each job kind completes and its URL serves real media of the requested
// shape; credits are exact on every failure path.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import {
  api,
  creditsOf,
  startGateway,
  startService,
  startWorkers,
  waitForJobStatus,
  type InProcessGateway as Gateway,
  type Service,
  type Workers,
} from '../support/services.js';
import { insertActor, insertUpload, insertVoice, jobObjectKeys, probeUrl } from '../support/fixtures.js';
import { ledgerForJob } from '../support/ledger.js';
import type { Config } from '../../shared/config.js';

let svc: Service;
let tdb: TestDatabase;
let config: Config;
let gw: Gateway;
let workers: Workers;

before(async () => {
  // The reconciler is driven by hand (runOnce) so its timing is the test's.
  svc = await startService({
    RECONCILE_INTERVAL_MS: '3600000',
    LOCAL_RENDER_FAULTS: 'true',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
  });
  ({ tdb, config, gw, workers } = svc);
});

after(async () => {
  await svc?.close();
});

/** Overrides that keep the suite's task queues (so the suite's workers run what another gateway creates). */
function sameQueues(): Record<string, string> {
  return { TASK_QUEUE_PREFIX: config.TASK_QUEUE_PREFIX, RATE_LIMIT_GENERATE_PER_MIN: '1000', RATE_LIMIT_POLL_PER_MIN: '100000' };
}

function pngSize(buf: Buffer): { width: number; height: number } {
  assert.equal(buf.subarray(1, 4).toString('latin1'), 'PNG');
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

describe('image jobs', () => {
  test('an image job completes and every URL serves a PNG of the requested aspect ratio', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const created = await c.post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: 'a red fox in snow',
      model: 'nano-banana-2',
      aspect_ratio: '9:16',
      count: 2,
    });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.data.status, 'pending');
    assert.equal(typeof created.body.data.created_at, 'number');
    const id = created.body.data.id as string;

    const notReadyOrDone = await c.get(`/v1/images/${id}/url`);
    if (notReadyOrDone.status === 409) {
      assert.equal(notReadyOrDone.body.error.code, 'not_ready');
      assert.ok(['pending', 'generating'].includes(notReadyOrDone.body.status));
    }

    const job = await waitForJobStatus(c, `/v1/images/${id}`, ['completed', 'failed']);
    assert.equal(job.status, 'completed');
    assert.equal(job.error, null);
    assert.deepEqual(
      { project_id: job.project_id, prompt: job.prompt, model: job.model, aspect_ratio: job.aspect_ratio },
      { project_id: t.projectId, prompt: 'a red fox in snow', model: 'nano-banana-2', aspect_ratio: '9:16' },
    );
    assert.equal(job.progress, undefined, 'a finished job carries no live progress');

    const url = await c.get(`/v1/images/${id}/url`);
    assert.equal(url.status, 200, url.text);
    assert.equal(url.body.data.id, id);
    assert.equal(url.body.data.urls.length, 2);
    assert.equal(url.body.data.url, url.body.data.urls[0]);
    const images = await Promise.all((url.body.data.urls as string[]).map((u) => probeUrl(u)));
    for (const img of images) {
      assert.equal(img.contentType, 'image/png');
      const { width, height } = pngSize(img.bytes);
      assert.equal(width * 16, height * 9, `${width}x${height} is 9:16`);
    }
    assert.notDeepEqual(images[0]!.bytes, images[1]!.bytes, 'count 2 gives two distinct images');

    assert.equal(await creditsOf(tdb.db, t), 100 - 8, 'charged 2 images × 4 credits once');
    const ledger = await ledgerForJob(tdb.db, id);
    assert.deepEqual(
      ledger.map((l) => [l.reason, l.delta]),
      [['charge', -8]],
    );
  });

  test('a forced provider failure fails the job and refunds it exactly once', async () => {
    const t = await createTenant(tdb.db, 50);
    const c = api(gw.baseUrl, t.apiKey);
    const created = await c.post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: 'doomed [fail:terminal]',
      model: 'seedream-4.5',
      aspect_ratio: '1:1',
      count: 1,
    });
    assert.equal(created.status, 200, created.text);
    const id = created.body.data.id;
    assert.equal(await creditsOf(tdb.db, t), 46, 'charged at create time');
    const job = await waitForJobStatus(c, `/v1/images/${id}`, ['completed', 'failed']);
    assert.equal(job.status, 'failed');
    assert.equal(job.error.code, 'generation_failed');
    assert.match(job.error.message, /fail|terminal|inject/i);
    const url = await c.get(`/v1/images/${id}/url`);
    assert.equal(url.status, 409);
    assert.equal(url.body.error.code, 'generation_failed');
    assert.equal(url.body.status, 'failed');
    assert.equal(await creditsOf(tdb.db, t), 50, 'refunded');
    const ledger = await ledgerForJob(tdb.db, id);
    assert.deepEqual(
      ledger.map((l) => [l.reason, l.delta]),
      [
        ['charge', -4],
        ['refund', 4],
      ],
    );
  });

  test('a job the provider fails after rendering keeps no media: its outputs are removed from storage', async () => {
    const t = await createTenant(tdb.db, 50);
    const c = api(gw.baseUrl, t.apiKey);
    // [fail:poll]: the render succeeds and its outputs are stored, then the provider reports failure.
    const created = await c.post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: 'rendered then failed [fail:poll]',
      model: 'seedream-4.5',
      aspect_ratio: '1:1',
      count: 2,
    });
    assert.equal(created.status, 200, created.text);
    const id = created.body.data.id as string;
    const job = await waitForJobStatus(c, `/v1/images/${id}`, ['completed', 'failed']);
    assert.equal(job.status, 'failed');
    const row = await tdb.db.selectFrom('jobs').select('provider_ref').where('id', '=', id).executeTakeFirstOrThrow();
    const rendered = (row.provider_ref as { outputs?: { key: string }[] } | null)?.outputs?.map((o) => o.key) ?? [];
    assert.equal(rendered.length, 2, 'the outputs had been stored');
    for (const key of rendered) assert.match(key, new RegExp(`^jobs/${id}/[A-Za-z0-9_-]{22}/output-\\d\\.png$`), 'keys carry a token');
    assert.deepEqual(await jobObjectKeys(config, id), []);
    assert.equal(await creditsOf(tdb.db, t), 50);
  });

  test('transient provider failures are retried and the job completes, charged once', async () => {
    const t = await createTenant(tdb.db, 50);
    const c = api(gw.baseUrl, t.apiKey);
    const created = await c.post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: 'flaky [fail:transient:2]',
      model: 'gpt-image-2',
      aspect_ratio: '16:9',
      count: 1,
    });
    assert.equal(created.status, 200, created.text);
    const job = await waitForJobStatus(c, `/v1/images/${created.body.data.id}`, ['completed', 'failed']);
    assert.equal(job.status, 'completed');
    assert.equal(await creditsOf(tdb.db, t), 50 - 12);
    assert.equal((await ledgerForJob(tdb.db, job.id)).length, 1);
  });

  test('50 concurrent creates against credits for 25 accept exactly 25 and end at a balance of 0', async () => {
    const t = await createTenant(tdb.db, 25 * 4);
    const c = api(gw.baseUrl, t.apiKey);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        c.post('/v1/images/generate', { project_id: t.projectId, prompt: `race ${i}`, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 }),
      ),
    );
    const accepted = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    assert.equal(accepted.length, 25);
    assert.equal(refused.length, 25);
    for (const r of refused) {
      assert.equal(r.body.error.code, 'insufficient_credits');
      assert.match(r.body.error.message, /requires 4 credits, the workspace has 0/);
    }
    assert.equal(await creditsOf(tdb.db, t), 0);
  });
});

describe('video, replace-actor and talking-actor jobs', () => {
  test('a video job completes as an H.264 MP4 of the requested duration and resolution', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const startFrame = await insertUpload(tdb.db, gw.storage, t, 'image');
    const created = await c.post('/v1/videos/generate', {
      project_id: t.projectId,
      prompt: 'waves at dusk',
      model: 'seedance-1.5',
      aspect_ratio: '9:16',
      duration: 4,
      resolution: '480p',
      start_frame_file_id: startFrame,
    });
    assert.equal(created.status, 200, created.text);
    assert.deepEqual(
      { status: created.body.data.status, duration: created.body.data.duration, resolution: created.body.data.resolution },
      { status: 'pending', duration: 4, resolution: '480p' },
    );
    const job = await waitForJobStatus(c, `/v1/videos/${created.body.data.id}`, ['completed', 'failed']);
    assert.equal(job.status, 'completed', JSON.stringify(job.error));
    const url = await c.get(`/v1/videos/${job.id}/url`);
    assert.equal(url.status, 200);
    const media = await probeUrl(url.body.data.url);
    assert.equal(media.videoCodec, 'h264');
    assert.ok(Math.abs(media.durationSeconds! - 4) <= 0.5, `duration ${media.durationSeconds}`);
    assert.deepEqual([media.width, media.height], [480, 854]);
    assert.equal(await creditsOf(tdb.db, t), 1000 - 4 * 8);
  });

  test('video requests are checked against the model catalog', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const base = { project_id: t.projectId, prompt: 'x', model: 'veo-3.1' };
    const badDuration = await c.post('/v1/videos/generate', { ...base, duration: 5 });
    assert.equal(badDuration.status, 400);
    assert.equal(badDuration.body.error.code, 'invalid_request');
    assert.match(badDuration.body.error.message, /duration: veo-3.1 supports 4, 6, 8/);
    const badRatio = await c.post('/v1/videos/generate', { ...base, aspect_ratio: '1:1' });
    assert.match(badRatio.body.error.message, /aspect_ratio/);
    const badModel = await c.post('/v1/videos/generate', { ...base, model: 'sora-3' });
    assert.equal(badModel.status, 400);
    assert.equal(badModel.body.error.code, 'invalid_model');
    const missingUpload = await c.post('/v1/videos/generate', { ...base, start_frame_file_id: 'file_nope' });
    assert.equal(missingUpload.status, 404);
    assert.equal(await creditsOf(tdb.db, t), 1000, 'refused requests charge nothing');
  });

  test('a replace-actor job from file uploads completes with the requested duration', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const image = await insertUpload(tdb.db, gw.storage, t, 'image');
    const video = await insertUpload(tdb.db, gw.storage, t, 'video');
    const created = await c.post('/v1/replace-actors/generations', { project_id: t.projectId, image_file_id: image, video_file_id: video, duration: 3 });
    assert.equal(created.status, 200, created.text);
    assert.deepEqual(Object.keys(created.body.data).sort(), ['id', 'status']);
    const job = await waitForJobStatus(c, `/v1/replace-actors/generations/${created.body.data.id}`, ['completed', 'failed']);
    assert.equal(job.status, 'completed', JSON.stringify(job.error));
    assert.equal(job.model, 'replace-actor');
    assert.equal(job.aspect_ratio, '9:16');
    const url = await c.get(`/v1/replace-actors/generations/${job.id}/url`);
    const media = await probeUrl(url.body.data.url);
    assert.ok(Math.abs(media.durationSeconds! - 3) <= 0.5, `duration ${media.durationSeconds}`);
    assert.equal(media.width! * 16, media.height! * 9);
  });

  test('replace-actor: a duration below 3 is a 400; without one the output lasts the default 30 s (probed)', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const image = await insertUpload(tdb.db, gw.storage, t, 'image');
    const video = await insertUpload(tdb.db, gw.storage, t, 'video');
    const short = await c.post('/v1/replace-actors/generations', { project_id: t.projectId, image_file_id: image, video_file_id: video, duration: 2.9 });
    assert.equal(short.status, 400, short.text);
    assert.equal(short.body.error.code, 'invalid_request');
    assert.match(short.body.error.message, /duration/);
    assert.equal(await creditsOf(tdb.db, t), 1000, 'a refused create charges nothing');

    const created = await c.post('/v1/replace-actors/generations', { project_id: t.projectId, image_file_id: image, video_file_id: video });
    assert.equal(created.status, 200, created.text);
    const job = await waitForJobStatus(c, `/v1/replace-actors/generations/${created.body.data.id}`, ['completed', 'failed'], 280_000);
    assert.equal(job.status, 'completed', JSON.stringify(job.error));
    assert.equal(job.duration, 30);
    const media = await probeUrl((await c.get(`/v1/replace-actors/generations/${job.id}/url`)).body.data.url);
    assert.equal(media.videoCodec, 'h264');
    assert.ok(Math.abs(media.durationSeconds! - 30) <= 0.5, `duration ${media.durationSeconds}`);
  });

  test('replace-actor requires both file ids or both URLs', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const r = await c.post('/v1/replace-actors/generations', { project_id: t.projectId, image_url: 'https://example.com/a.png', video_file_id: 'file_x' });
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /either image_file_id and video_file_id, or image_url and video_url/);
    const d = await c.post('/v1/replace-actors/generations', {
      project_id: t.projectId,
      image_url: 'https://example.com/a.png',
      video_url: 'https://example.com/v.mp4',
      duration: 31,
    });
    assert.equal(d.status, 400);
    assert.match(d.body.error.message, /duration/);
    const m = await c.post('/v1/replace-actors/generations', {
      project_id: t.projectId,
      image_url: 'https://example.com/a.png',
      video_url: 'https://example.com/v.mp4',
      model: 'wan-2.2',
    });
    assert.equal(m.status, 400);
    assert.equal(m.body.error.code, 'invalid_model');
    assert.match(m.body.error.message, /replace-actor/);
  });

  test('a talking-actor job uses the default voice and yields a video with speech', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const voice = await insertVoice(tdb.db);
    const actor = await insertActor(tdb.db, gw.storage, { defaultVoiceId: voice });
    const created = await c.post('/v1/talking-actors/generate', {
      project_id: t.projectId,
      actor_id: actor,
      script: 'Hello there. This is a short test.',
      voice_options: { speed: 1.1 },
    });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.data.voice_id, voice);
    assert.equal(created.body.data.status, 'pending');
    const job = await waitForJobStatus(c, `/v1/talking-actors/${created.body.data.id}`, ['completed', 'failed']);
    assert.equal(job.status, 'completed', JSON.stringify(job.error));
    assert.deepEqual({ actor_id: job.actor_id, voice_id: job.voice_id }, { actor_id: actor, voice_id: voice });
    const url = await c.get(`/v1/talking-actors/${job.id}/url`);
    const media = await probeUrl(url.body.data.url);
    assert.equal(media.hasAudio, true);
    assert.ok(media.durationSeconds! > 1);
  });

  test('talking-actor with an explicit voice_id: H.264 + AAC at 720×1280, and the duration follows the script (probed)', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const defaultVoice = await insertVoice(tdb.db);
    const chosen = await insertVoice(tdb.db, { ttsVoice: 'en-us' });
    const actor = await insertActor(tdb.db, gw.storage, { defaultVoiceId: defaultVoice });
    const scripts = {
      short: 'Hello there.',
      long: 'Hello there. This script is a good deal longer, so the speech takes longer, and the video must last as long as the speech does, sentence after sentence.',
    };
    const probed: Record<string, Awaited<ReturnType<typeof probeUrl>>> = {};
    for (const [name, script] of Object.entries(scripts)) {
      const created = await c.post('/v1/talking-actors/generate', { project_id: t.projectId, actor_id: actor, voice_id: chosen, script });
      assert.equal(created.status, 200, created.text);
      assert.equal(created.body.data.voice_id, chosen, 'the explicit voice wins over the default');
      const job = await waitForJobStatus(c, `/v1/talking-actors/${created.body.data.id}`, ['completed', 'failed']);
      assert.equal(job.status, 'completed', JSON.stringify(job.error));
      assert.equal(job.voice_id, chosen);
      probed[name] = await probeUrl((await c.get(`/v1/talking-actors/${job.id}/url`)).body.data.url);
    }
    for (const [name, media] of Object.entries(probed)) {
      assert.deepEqual([media.videoCodec, media.audioCodec, media.width, media.height], ['h264', 'aac', 720, 1280], name);
    }
    assert.ok(
      probed.long!.durationSeconds! > probed.short!.durationSeconds! + 3,
      `long ${probed.long!.durationSeconds} s vs short ${probed.short!.durationSeconds} s`,
    );
  });

  test('talking-actor: no default voice and no voice_id is a clear 400; unknown actor or voice is 404', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const actor = await insertActor(tdb.db, gw.storage, { defaultVoiceId: null });
    const noVoice = await c.post('/v1/talking-actors/generate', { project_id: t.projectId, actor_id: actor, script: 'hi' });
    assert.equal(noVoice.status, 400);
    assert.match(noVoice.body.error.message, /has no default voice/);
    const unknownActor = await c.post('/v1/talking-actors/generate', { project_id: t.projectId, actor_id: 'actor_nope', script: 'hi', voice_id: 'v' });
    assert.equal(unknownActor.status, 404);
    const unknownVoice = await c.post('/v1/talking-actors/generate', { project_id: t.projectId, actor_id: actor, script: 'hi', voice_id: 'voice_nope' });
    assert.equal(unknownVoice.status, 404);
    const badSpeed = await c.post('/v1/talking-actors/generate', {
      project_id: t.projectId,
      actor_id: actor,
      script: 'hi',
      voice_id: 'x',
      voice_options: { speed: 2 },
    });
    assert.equal(badSpeed.status, 400);
    assert.match(badSpeed.body.error.message, /voice_options.speed/);
  });
});

describe('credits and scoping on create', () => {
  test('each kind answers 402 with the required and available amounts, and charges nothing', async () => {
    const t = await createTenant(tdb.db, 3);
    const c = api(gw.baseUrl, t.apiKey);
    const voice = await insertVoice(tdb.db);
    const actor = await insertActor(tdb.db, gw.storage, { defaultVoiceId: voice });
    const image = await insertUpload(tdb.db, gw.storage, t, 'image');
    const video = await insertUpload(tdb.db, gw.storage, t, 'video');
    const requests: [string, Record<string, unknown>][] = [
      ['/v1/images/generate', { project_id: t.projectId, prompt: 'p', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 }],
      ['/v1/videos/generate', { project_id: t.projectId, prompt: 'p', model: 'kling-2.6' }],
      ['/v1/replace-actors/generations', { project_id: t.projectId, image_file_id: image, video_file_id: video }],
      ['/v1/talking-actors/generate', { project_id: t.projectId, actor_id: actor, script: 'hello' }],
    ];
    for (const [path, body] of requests) {
      const r = await c.post(path, body);
      assert.equal(r.status, 402, `${path}: ${r.text}`);
      assert.equal(r.body.error.code, 'insufficient_credits');
      assert.match(r.body.error.message, /requires \d+ credits, the workspace has 3/);
    }
    assert.equal(await creditsOf(tdb.db, t), 3);
    const jobs = await tdb.db.selectFrom('jobs').select('id').where('workspace_id', '=', t.workspaceId).execute();
    assert.equal(jobs.length, 0);
  });

  test("another workspace's project is 403 and its jobs are 404", async () => {
    const a = await createTenant(tdb.db, 100);
    const b = await createTenant(tdb.db, 100);
    const ca = api(gw.baseUrl, a.apiKey);
    const cb = api(gw.baseUrl, b.apiKey);
    const forbidden = await ca.post('/v1/images/generate', { project_id: b.projectId, prompt: 'p', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.body.error.code, 'forbidden');
    // The project is checked before anything else the request gets wrong: a missing reference
    // (404) and a webhook without a signing secret (400) in another workspace's project are 403.
    for (const [body, ownStatus] of [
      [
        { project_id: b.projectId, prompt: 'p', model: 'veo-3.1', aspect_ratio: '16:9', duration: 8, resolution: '720p', start_frame_file_id: 'upl_missing' },
        404,
      ],
      [
        {
          project_id: b.projectId,
          prompt: 'p',
          model: 'veo-3.1',
          aspect_ratio: '16:9',
          duration: 8,
          resolution: '720p',
          webhook_url: 'https://example.test/hook',
        },
        400,
      ],
    ] as const) {
      const r = await ca.post('/v1/videos/generate', body);
      assert.equal(r.status, 403, r.text);
      assert.equal(r.body.error.code, 'forbidden');
      const own = await ca.post('/v1/videos/generate', { ...body, project_id: a.projectId });
      assert.equal(own.status, ownStatus, `in its own project the request is refused for its real fault: ${own.text}`);
    }
    assert.equal(await creditsOf(tdb.db, a), 100);
    const created = await ca.post('/v1/images/generate', { project_id: a.projectId, prompt: 'p', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
    assert.equal(created.status, 200);
    for (const path of [`/v1/images/${created.body.data.id}`, `/v1/images/${created.body.data.id}/url`, `/v1/videos/${created.body.data.id}`]) {
      const r = await cb.get(path);
      assert.equal(r.status, 404, path);
      assert.equal(r.body.error.code, 'not_found');
    }
    assert.equal((await ca.get(`/v1/videos/${created.body.data.id}`)).status, 404, 'an image job is not a video job');
  });

  test('invalid_model and invalid_request are told apart', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const bad = await c.post('/v1/images/generate', { project_id: t.projectId, prompt: 'p', model: 'dall-e-2', aspect_ratio: '1:1', count: 1 });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'invalid_model');
    assert.match(bad.body.error.message, /use one of nano-banana-2, .*gpt-image-2, .*seedream-4\.5/);
    const missing = await c.post('/v1/images/generate', { project_id: t.projectId, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
    assert.equal(missing.body.error.code, 'invalid_request');
    assert.match(missing.body.error.message, /prompt/);
    const count = await c.post('/v1/images/generate', { project_id: t.projectId, prompt: 'p', model: 'nano-banana-2', aspect_ratio: '1:1', count: 5 });
    assert.match(count.body.error.message, /count/);
    const ratio = await c.post('/v1/images/generate', { project_id: t.projectId, prompt: 'p', model: 'nano-banana-2', aspect_ratio: '4:3', count: 1 });
    assert.match(ratio.body.error.message, /aspect_ratio.*1:1.*9:16.*16:9/);
  });
});

describe('cancellation and reconciliation', () => {
  test('canceling an in-flight job ends it as failed with code canceled and refunds; canceling again is 409', async () => {
    const slow = testConfig(tdb.url, {
      LOCAL_RENDER_LATENCY_MS: '60000',
      RECONCILE_INTERVAL_MS: '3600000',
      RATE_LIMIT_GENERATE_PER_MIN: '1000',
      RATE_LIMIT_POLL_PER_MIN: '100000',
    });
    const sgw = await startGateway(slow, tdb.db);
    const sworkers = await startWorkers(slow, tdb.db);
    try {
      const t = await createTenant(tdb.db, 100);
      const c = api(sgw.baseUrl, t.apiKey);
      const created = await c.post('/v1/images/generate', { project_id: t.projectId, prompt: 'slow', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
      const id = created.body.data.id;
      // The row says generating from the first step on; its stored progress tells the phases
      // apart, and reaches the provider wait (with the provider's percent) once it is submitted.
      const generating = await waitFor('stored progress to reach the provider wait', async () => {
        const r = await c.get(`/v1/images/${id}`);
        const p = r.body?.data?.progress;
        return p?.phase === 'generating' && typeof p.percent === 'number' ? r.body.data : undefined;
      });
      assert.equal(generating.status, 'generating');
      assert.ok(generating.progress.percent < 100, 'the provider reports partial progress');
      const canceled = await c.post(`/v1/images/${id}/cancel`);
      assert.equal(canceled.status, 200, canceled.text);
      const job = await waitForJobStatus(c, `/v1/images/${id}`, ['failed', 'completed']);
      assert.equal(job.status, 'failed');
      assert.equal(job.error.code, 'canceled');
      assert.equal(await creditsOf(tdb.db, t), 100);
      const again = await c.post(`/v1/images/${id}/cancel`);
      assert.equal(again.status, 409);
      assert.equal(again.body.error.code, 'not_cancelable');
    } finally {
      await sworkers.stop();
      await sgw.close();
    }
  });

  test('a job whose workflow start failed stays pending, then the reconciler starts it and it completes, charged once', async () => {
    const { Client, Connection } = await import('@temporalio/client');
    // A gateway whose Temporal is unreachable: the create commits, the start fails.
    const deadClient = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1', connectTimeout: 200 }) });
    const dgw = await startGateway(testConfig(tdb.url, { ...sameQueues(), WORKFLOW_START_TIMEOUT_MS: '500' }), tdb.db, { temporal: deadClient });
    try {
      const t = await createTenant(tdb.db, 100);
      const c = api(dgw.baseUrl, t.apiKey);
      const created = await c.post('/v1/images/generate', { project_id: t.projectId, prompt: 'orphan', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
      assert.equal(created.status, 200, created.text);
      const id = created.body.data.id;
      const row = await tdb.db.selectFrom('jobs').select(['status', 'workflow_started']).where('id', '=', id).executeTakeFirstOrThrow();
      assert.deepEqual(row, { status: 'pending', workflow_started: false });
      assert.equal((await api(gw.baseUrl, t.apiKey).get(`/v1/images/${id}`)).body.data.status, 'pending');

      // The reconciler leaves jobs younger than a few seconds to the gateway's own start.
      await waitFor(
        'the reconciler to start the job',
        async () => ((await workers.fleet.reconciler!.runOnce()).started.includes(id) ? true : undefined),
        30_000,
        500,
      );
      const job = await waitForJobStatus(api(gw.baseUrl, t.apiKey), `/v1/images/${id}`, ['completed', 'failed']);
      assert.equal(job.status, 'completed');
      assert.equal(await creditsOf(tdb.db, t), 96);
      assert.deepEqual(
        (await ledgerForJob(tdb.db, id)).map((l) => l.reason),
        ['charge'],
      );
    } finally {
      await dgw.close();
    }
  });
});
