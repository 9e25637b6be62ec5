// The local renderer adapter against the stack's real MinIO: inputs read from and outputs written to
// the object store, poll/latency behaviour, idempotent re-submit, and opt-in fault injection.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createStorage, type Storage } from '../../shared/storage.js';
import { routeFor } from '../../shared/catalog.js';
import { createLocalAdapter, type LocalRef } from '../../activities/providers/local/adapter.js';
import { probeMedia, renderImage, renderVideo } from '../../activities/providers/local/media.js';
import { ProviderError, type InputFile, type ProviderAdapter, type ProviderContext, type ProviderRequest } from '../../activities/providers/types.js';
import { randomToken } from '../../shared/ids.js';
import { loadConfig, type Config } from '../../shared/config.js';
import { requireStackEnv, waitFor } from '../support/stack.js';

let config: Config;
let storage: Storage;
let work: string;
let renderTmp: string;
const run = randomToken(8);
const written: string[] = [];
let heartbeats = 0;

function ctx(attempt = 1, signal = new AbortController().signal): ProviderContext {
  return {
    storage,
    inputUrl: (key) => storage.url(key),
    heartbeat: () => {
      heartbeats++;
    },
    signal,
    attempt,
  };
}

function adapter(over: Partial<Parameters<typeof createLocalAdapter>[0]> = {}): ProviderAdapter {
  return createLocalAdapter({
    ffmpegPath: config.FFMPEG_PATH,
    ffprobePath: config.FFPROBE_PATH,
    espeakPath: config.ESPEAK_PATH,
    latencyMs: 0,
    faults: false,
    tmpDir: renderTmp,
    ...over,
  });
}

function request(model: string, fields: Partial<ProviderRequest> = {}): ProviderRequest {
  const route = routeFor(model);
  assert.ok(route, `model ${model} in the catalog`);
  return { jobId: `job_${run}_${randomToken(6)}`, kind: route.kind, model, route, inputs: [], ...fields };
}

/** Downloads a stored object to a local file for probing. */
async function fetchObject(key: string): Promise<string> {
  const path = join(work, key.replaceAll('/', '_'));
  await pipeline(await storage.getStream(key), createWriteStream(path));
  return path;
}

async function putInput(role: InputFile['role'], name: string, body: Buffer, contentType: string): Promise<InputFile> {
  const key = `test-inputs/${run}/${name}`;
  await storage.putStream(key, body, contentType, body.length);
  written.push(key);
  return { role, key, contentType };
}

function track(ref: { outputs?: { key?: string }[] }) {
  for (const o of ref.outputs ?? []) if (o.key) written.push(o.key);
}

before(async () => {
  requireStackEnv();
  config = loadConfig({ ...process.env, NODE_ENV: 'test' });
  storage = createStorage(config);
  await storage.ping();
  work = await mkdtemp(join(tmpdir(), 'local-adapter-test-'));
  renderTmp = await mkdtemp(join(tmpdir(), 'local-adapter-render-'));
});

after(async () => {
  for (const key of written) await storage.remove(key).catch(() => undefined);
  await rm(work, { recursive: true, force: true });
  await rm(renderTmp, { recursive: true, force: true });
});

describe('local adapter', () => {
  test('image: count distinct PNGs at the aspect ratio, stored under jobs/<jobId>/<token>/, and re-submit overwrites the same keys', async () => {
    const a = adapter();
    const req = request('nano-banana-2', { prompt: 'a castle on a hill', aspectRatio: '16:9', count: 2 });
    heartbeats = 0;
    const ref = (await a.submit(req, ctx())) as LocalRef;
    track(ref);
    assert.equal(ref.provider, 'local');
    // Under the job's prefix, behind a token that cannot be derived from the job id alone.
    const prefix = storage.jobMediaPrefix(req.jobId);
    assert.match(prefix, new RegExp(`^jobs/${req.jobId}/[A-Za-z0-9_-]{22}$`));
    assert.deepEqual(
      ref.outputs.map((o) => o.key),
      [`${prefix}/output-1.png`, `${prefix}/output-2.png`],
    );
    assert.ok(heartbeats > 0, 'heartbeats while rendering');
    const poll = await a.poll(ref, ctx());
    assert.equal(poll.state, 'succeeded');
    assert.deepEqual(poll.outputs, ref.outputs);
    const files = await Promise.all(ref.outputs.map((o) => fetchObject(o.key)));
    for (const [i, f] of files.entries()) {
      const info = await probeMedia(f, { ffprobePath: config.FFPROBE_PATH });
      assert.deepEqual([info.width, info.height, info.videoCodec], [1024, 576, 'png']);
      const st = await storage.stat(ref.outputs[i]!.key);
      assert.equal(st?.size, ref.outputs[i]!.size);
      assert.equal(st?.contentType, 'image/png');
    }
    assert.ok(!(await readFile(files[0]!)).equals(await readFile(files[1]!)), 'the images differ');
    const again = (await a.submit(req, ctx(2))) as LocalRef;
    assert.deepEqual(again.outputs, ref.outputs, 'same keys, same bytes');
    assert.deepEqual(await readdir(renderTmp), [], 'temp files removed');
  });

  test("image: the request's asked format is kept in the reference (the output store's target, read without the job row)", async () => {
    const asked = request('nano-banana-2', { prompt: 'a castle', aspectRatio: '1:1', count: 1, imageTarget: { format: 'webp', quality: 70 } });
    const ref = (await adapter().submit(asked, ctx())) as LocalRef;
    written.push(...ref.outputs.map((o) => o.key));
    assert.deepEqual(ref.image, { format: 'webp', quality: 70 });
    const plain = (await adapter().submit(request('nano-banana-2', { prompt: 'a castle', aspectRatio: '1:1', count: 1 }), ctx())) as LocalRef;
    written.push(...plain.outputs.map((o) => o.key));
    assert.equal(plain.image, undefined, 'a PNG job keeps nothing');
  });

  test('video: start frame from the store, duration and resolution of the request', async () => {
    const start = await putInput('start_frame', 'start.png', await renderImage({ prompt: 'start frame', width: 400, height: 300 }), 'image/png');
    const ref = (await adapter().submit(
      request('seedance-1.5', { prompt: 'a slow pan', aspectRatio: '16:9', resolution: '480p', duration: 2, inputs: [start] }),
      ctx(),
    )) as LocalRef;
    track(ref);
    assert.equal(ref.outputs.length, 1);
    assert.match(ref.outputs[0]!.key, /\/output-1\.mp4$/);
    assert.equal(ref.outputs[0]!.contentType, 'video/mp4');
    const info = await probeMedia(await fetchObject(ref.outputs[0]!.key), { ffprobePath: config.FFPROBE_PATH });
    assert.equal(info.videoCodec, 'h264');
    assert.deepEqual([info.width, info.height], [854, 480]);
    assert.ok(Math.abs(info.durationSeconds! - 2) <= 0.5);
  });

  test('talking actor: actor image and voice give an MP4 with an audio track', async () => {
    const actor = await putInput(
      'actor_image',
      'actor.jpg',
      await renderImage({ prompt: 'actor', width: 360, height: 640, format: 'jpeg', ffmpegPath: config.FFMPEG_PATH }),
      'image/jpeg',
    );
    const req = request('talking-actor', {
      script: 'Hi! Welcome to our product tour.',
      voice: { id: 'voice_x', ttsVoice: 'en-us+f3', providerVoiceId: null, gender: 'female' },
      voiceOptions: { speed: 1.1 },
      inputs: [actor],
    });
    const ref = (await adapter().submit(req, ctx())) as LocalRef;
    track(ref);
    const info = await probeMedia(await fetchObject(ref.outputs[0]!.key), { ffprobePath: config.FFPROBE_PATH });
    assert.equal(info.hasAudio, true);
    assert.equal(info.audioCodec, 'aac');
    assert.deepEqual([info.width, info.height], [720, 1280]);
    assert.ok(info.durationSeconds! > 1 && info.durationSeconds! < 6, `duration ${info.durationSeconds}`);
  });

  test('replace actor: image over the motion video for the requested duration', async () => {
    const motionPath = join(work, 'motion.mp4');
    await renderVideo({ prompt: 'dance', width: 320, height: 240, durationSeconds: 1, outPath: motionPath, ffmpegPath: config.FFMPEG_PATH });
    const video = await putInput('video', 'motion.mp4', await readFile(motionPath), 'video/mp4');
    const image = await putInput('image', 'character.png', await renderImage({ prompt: 'character', width: 200, height: 300 }), 'image/png');
    const ref = (await adapter().submit(request('replace-actor', { aspectRatio: '1:1', duration: 3, inputs: [image, video] }), ctx())) as LocalRef;
    track(ref);
    const info = await probeMedia(await fetchObject(ref.outputs[0]!.key), { ffprobePath: config.FFPROBE_PATH });
    assert.deepEqual([info.width, info.height, info.videoCodec], [720, 720, 'h264']);
    assert.ok(Math.abs(info.durationSeconds! - 3) <= 0.5);
  });

  test('replace actor without its inputs fails terminally', async () => {
    await assert.rejects(adapter().submit(request('replace-actor', { duration: 3 }), ctx()), (err: unknown) => err instanceof ProviderError && !err.retryable);
  });

  test('an unreadable input fails terminally with a clean message: no tool output, no temp path', async () => {
    const video = await putInput('video', 'broken.mp4', Buffer.from('not a video at all '.repeat(64)), 'video/mp4');
    const image = await putInput('image', 'broken.png', Buffer.from('not a png either '.repeat(64)), 'image/png');
    await assert.rejects(adapter().submit(request('replace-actor', { aspectRatio: '1:1', duration: 3, inputs: [image, video] }), ctx()), (err: unknown) => {
      assert.ok(err instanceof ProviderError && !err.retryable, String(err));
      // Refused by the inspection, which names the input by its role.
      assert.equal(err.message, 'local renderer: the motion video is not a supported video (by its content)');
      assert.doesNotMatch(err.message, /\/tmp|ffmpeg|exited|Invalid data|\|/);
      return true;
    });
  });

  test('latency: poll reports running with a percentage, then succeeded', async () => {
    const a = adapter({ latencyMs: 600 });
    const ref = (await a.submit(request('seedream-4.5', { prompt: 'slow', aspectRatio: '1:1' }), ctx())) as LocalRef;
    track(ref);
    const first = await a.poll(ref, ctx());
    assert.equal(first.state, 'running');
    assert.ok(typeof first.percent === 'number' && first.percent >= 0 && first.percent < 100);
    assert.ok(first.nextPollMs! > 0 && first.nextPollMs! <= 600);
    const done = await waitFor(
      'the local job to be ready',
      async () => {
        const p = await a.poll(ref, ctx());
        return p.state === 'succeeded' ? p : undefined;
      },
      10_000,
      50,
    );
    assert.equal(done.outputs?.[0]?.key, ref.outputs[0]!.key);
    await a.cancel(ref, ctx());
  });

  describe('fault injection', () => {
    test('[fail:terminal] throws a non-retryable ProviderError', async () => {
      await assert.rejects(
        adapter({ faults: true }).submit(request('nano-banana-2', { prompt: 'x [fail:terminal]' }), ctx()),
        (err: unknown) => err instanceof ProviderError && !err.retryable,
      );
    });

    test('[fail:transient:2] fails attempts 1 and 2 retryably, attempt 3 succeeds', async () => {
      const a = adapter({ faults: true });
      const req = request('talking-actor', {
        script: 'Try again [fail:transient:2]',
        voice: { id: 'v', ttsVoice: 'en-us', providerVoiceId: null, gender: 'male' },
      });
      for (const attempt of [1, 2]) {
        await assert.rejects(a.submit(req, ctx(attempt)), (err: unknown) => err instanceof ProviderError && err.retryable);
      }
      const ref = (await a.submit(req, ctx(3))) as LocalRef;
      track(ref);
      assert.equal((await a.poll(ref, ctx(3))).state, 'succeeded');
    });

    test('[fail:poll] renders but poll reports failed with a message', async () => {
      const a = adapter({ faults: true });
      const ref = (await a.submit(request('gpt-image-1.5', { prompt: 'poll me [fail:poll]' }), ctx())) as LocalRef;
      track(ref);
      const p = await a.poll(ref, ctx());
      assert.equal(p.state, 'failed');
      assert.match(p.message ?? '', /injected/);
    });

    test('[latency:N] holds this job N ms (capped at 600000) over the configured latency', async () => {
      const a = adapter({ faults: true, latencyMs: 0 });
      const ref = (await a.submit(request('nano-banana-2', { prompt: 'slow one [latency:60000]' }), ctx())) as LocalRef;
      track(ref);
      assert.equal(ref.readyAt - ref.renderedAt, 60_000);
      const p = await a.poll(ref, ctx());
      assert.equal(p.state, 'running');
      assert.ok(p.percent! < 5, `percent ${p.percent}`);
      const capped = (await a.submit(request('nano-banana-2', { prompt: '[latency:999999]' }), ctx())) as LocalRef;
      track(capped);
      assert.equal(capped.readyAt - capped.renderedAt, 600_000);
    });

    test('markers are ordinary text when faults are off', async () => {
      const a = adapter({ faults: false });
      const ref = (await a.submit(request('nano-banana-2', { prompt: 'x [fail:terminal] [fail:poll] [latency:60000]' }), ctx())) as LocalRef;
      track(ref);
      assert.equal((await a.poll(ref, ctx())).state, 'succeeded');
    });
  });

  test('an aborted submit stops rendering and removes its temp files', async () => {
    const ac = new AbortController();
    const submitting = adapter().submit(request('veo-3.1', { prompt: 'long', aspectRatio: '16:9', resolution: '720p', duration: 600 }), ctx(1, ac.signal));
    setTimeout(() => ac.abort(new Error('activity cancelled')), 300);
    await assert.rejects(submitting, /activity cancelled/);
    assert.deepEqual(await readdir(renderTmp), []);
  });
});
