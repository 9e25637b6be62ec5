// A talking actor over a background video, on the real stack (gateway, Temporal, Postgres, MinIO,
// the local renderer, ffmpeg): a one-second magenta clip with its own tone, uploaded through the
// gateway (and, once, served by a loopback HTTPS server as background_video_url), is looped under
// the presenter for as long as the speech lasts. The output's pixels are read back: magenta where
// the background shows, the presenter in the lower right corner, before and after the background
// looped; its length is the speech's and its one audio track the speech's. Bad backgrounds are
// refused at create like any other input. The live route (local fakes of ElevenLabs and fal, the
// lipsync's clip from a loopback CDN) gets the same composite, and its providers never see the
// background.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTenant, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, assertApiError, creditsOf, startService, waitForJobStatus, type InProcessGateway, type Service } from '../support/services.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-providers/elevenlabs.js';
import { startFakeFal, type FakeFal } from '../support/fake-providers/fal.js';
import { insertActor, insertUpload, insertVoice, jobObjectKeys } from '../support/fixtures.js';
import { multipartUpload } from '../support/uploads.js';
import { startHttpsTestServer, type HttpsTestServer } from '../support/https-server.js';
import { probeMedia, runTool, synthesizeSpeech } from '../../activities/providers/local/media.js';
import { compositeOverBackground, CompositeError, presenterBox, presenterKeyOf } from '../../activities/providers/background.js';
import { defaultMediaTools } from '../../activities/providers/media-tools.js';
import { jobOutputKey } from '../../shared/job-media.js';
import { newId } from '../../shared/ids.js';

const ffmpeg = process.env.FFMPEG_PATH ?? 'ffmpeg';
const MAGENTA = [255, 0, 255] as const;
const script = 'Hello there. I am talking over a video that loops behind me.';
const ttsVoice = 'en-us+f3';

let svc: Service;
let remote: HttpsTestServer;
let dir: string;
let backgroundMp4: Buffer;
let speechSeconds: number;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'talking-background-'));
  // 16:9 and one second long with a loud tone: the 9:16 job must crop it, loop it and drop its sound.
  backgroundMp4 = await flatClip('magenta', '640x360', 1);
  // The local renderer speaks with espeak-ng: the same voice, script and speed give the same speech.
  ({ durationSeconds: speechSeconds } = await synthesizeSpeech({ text: script, ttsVoice, outPath: join(dir, 'speech.wav') }));
  remote = await startHttpsTestServer();
  remote.file('/background.mp4', backgroundMp4, 'video/mp4');
  svc = await startService({
    FETCH_ALLOW_LOOPBACK_ORIGIN: remote.origin,
    FETCH_EXTRA_CA_FILE: remote.caFile,
    RECONCILE_INTERVAL_MS: '3600000',
  });
});

after(async () => {
  await svc?.close();
  await remote?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** An H.264 + AAC clip of one flat colour (and a tone) made by ffmpeg. */
async function flatClip(colour: string, size: string, seconds: number): Promise<Buffer> {
  const path = join(dir, `${colour}-${size}-${seconds}.mp4`);
  await runTool(ffmpeg, [
    ...['-hide_banner', '-loglevel', 'error', '-y'],
    ...['-f', 'lavfi', '-i', `color=c=${colour}:s=${size}:r=25:d=${seconds}`, '-f', 'lavfi', '-i', `sine=frequency=1000:d=${seconds}`],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', '-f', 'mp4', path],
  ]);
  return readFile(path);
}

/** An actor with a default voice speaking `ttsVoice`, and the create body of a job of it. */
async function talkingBody(t: Tenant, extra: Record<string, unknown>) {
  const voice = await insertVoice(svc.tdb.db, { ttsVoice });
  const actor = await insertActor(svc.tdb.db, svc.gw.storage, { defaultVoiceId: voice });
  return { project_id: t.projectId, actor_id: actor, script, aspect_ratio: '9:16', ...extra };
}

/** The RGB pixels of the frame at `seconds` of an MP4, decoded by ffmpeg. */
async function frameAt(mp4: string, seconds: number, width: number, height: number): Promise<(x: number, y: number) => number[]> {
  const raw = await runTool(
    ffmpeg,
    ['-hide_banner', '-loglevel', 'error', '-ss', seconds.toFixed(2), '-i', mp4, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'],
    { stdout: true },
  );
  assert.equal(raw.length, width * height * 3, 'one whole frame decoded');
  return (x, y) => [...raw.subarray((y * width + x) * 3, (y * width + x) * 3 + 3)];
}

const distance = (a: readonly number[], b: readonly number[]) => Math.hypot(a[0]! - b[0]!, a[1]! - b[1]!, a[2]! - b[2]!);

/** Runs the job to completion and checks its output: size, length, sound, and pixels before and after the background looped. */
async function assertComposited(c: ReturnType<typeof api>, id: string) {
  const job = await waitForJobStatus(c, `/v1/talking-actors/${id}`, ['completed', 'failed']);
  assert.equal(job.status, 'completed', JSON.stringify(job.error));
  const url = await c.get(`/v1/talking-actors/${id}/url`);
  assert.equal(url.status, 200, url.text);
  const file = join(dir, `${id}.mp4`);
  await writeFile(file, Buffer.from(await (await fetch(url.body.data.url)).arrayBuffer()));
  const media = await probeMedia(file);
  assert.deepEqual([media.videoCodec, media.width, media.height, media.hasAudio, media.audioCodec], ['h264', 720, 1280, true, 'aac']);
  assert.ok(Math.abs(media.durationSeconds! - speechSeconds) < 0.3, `lasts ${media.durationSeconds} s, the speech ${speechSeconds} s`);
  const streams = JSON.parse(
    (await runTool('ffprobe', ['-v', 'error', '-show_entries', 'stream=codec_type', '-of', 'json', file], { stdout: true })).toString(),
  );
  assert.deepEqual(
    streams.streams.map((s: { codec_type: string }) => s.codec_type).sort(),
    ['audio', 'video'],
    "one audio track (the speech), the background's own dropped",
  );

  const box = presenterBox({ width: 720, height: 1280 });
  // The background loops under a speech of several seconds: read one frame in its first second, one after.
  for (const t of [0.5, Math.min(speechSeconds - 0.5, 2.5)]) {
    const px = await frameAt(file, t, 720, 1280);
    for (const [x, y] of [
      [60, 60],
      [360, 300],
      [660, 200],
      [100, 1200],
    ] as const)
      assert.ok(distance(px(x, y), MAGENTA) < 40, `background at (${x}, ${y}) at ${t} s: ${px(x, y).join(',')}`);
    // The presenter's box: the actor's image and the speech's waveform, nothing like the flat magenta.
    const inside = [
      [0.5, 0.3],
      [0.3, 0.5],
      [0.7, 0.5],
      [0.5, 0.7],
      [0.5, 0.5],
    ].map(([fx, fy]) => px(Math.round(box.x + box.width * fx!), Math.round(box.y + box.height * fy!)));
    const mean = inside.reduce((s, p) => s + distance(p, MAGENTA), 0) / inside.length;
    assert.ok(mean > 80, `the presenter shows in the lower right corner at ${t} s: ${inside.map((p) => p.join(',')).join(' ')}`);
  }
  return job;
}

describe('talking actor over a background video', () => {
  test('an uploaded background: the presenter over the looped, cropped background, for as long as the speech, at the price without one', async () => {
    const t = await createTenant(svc.tdb.db, 1000);
    const c = api(svc.gw.baseUrl, t.apiKey);
    const up = await multipartUpload(svc.gw.baseUrl, t.apiKey, t.projectId, { name: 'background.mp4', mime: 'video/mp4', bytes: backgroundMp4 });
    assert.equal(up.status, 200, up.text);
    const body = await talkingBody(t, {});
    const quote = await c.post('/v1/talking-actors/generate?dry_run=true', body);
    assert.equal(quote.status, 200, quote.text);

    const created = await c.post('/v1/talking-actors/generate', { ...body, background_video_file_id: up.body.data.id });
    assert.equal(created.status, 200, created.text);
    await assertComposited(c, created.body.data.id);
    assert.equal(await creditsOf(svc.tdb.db, t), 1000 - quote.body.data.price, 'a background costs nothing more');
    const keys = await jobObjectKeys(svc.config, created.body.data.id);
    assert.ok(
      keys.some((k) => /\/presenter-1\.mp4$/.test(k)),
      `the presenter's own clip is kept beside the output for a retried step: ${keys.join(', ')}`,
    );
  });

  test('a background from background_video_url is fetched when the job starts and composited the same way', async () => {
    const t = await createTenant(svc.tdb.db, 1000);
    const c = api(svc.gw.baseUrl, t.apiKey);
    const created = await c.post('/v1/talking-actors/generate', await talkingBody(t, { background_video_url: `${remote.origin}/background.mp4` }));
    assert.equal(created.status, 200, created.text);
    await assertComposited(c, created.body.data.id);
    assert.ok(remote.requests.includes('/background.mp4'));
  });

  test('an image, another workspace’s video, or both a file and a URL, are refused at create and charge nothing', async () => {
    const t = await createTenant(svc.tdb.db, 1000);
    const other = await createTenant(svc.tdb.db, 1000);
    const c = api(svc.gw.baseUrl, t.apiKey);
    const body = await talkingBody(t, {});
    const image = await insertUpload(svc.tdb.db, svc.gw.storage, t, 'image');
    const strangers = await insertUpload(svc.tdb.db, svc.gw.storage, other, 'video');

    const asImage = await c.post('/v1/talking-actors/generate', { ...body, background_video_file_id: image });
    assertApiError(asImage, 400, 'invalid_request');
    assert.match(asImage.body.error.message, /^background_video_file_id: .* is a image, a video is required/);
    const foreign = await c.post('/v1/talking-actors/generate', { ...body, background_video_file_id: strangers });
    assertApiError(foreign, 404, 'not_found');
    assert.match(foreign.body.error.message, /^background_video_file_id: /);
    const both = await c.post('/v1/talking-actors/generate', {
      ...body,
      background_video_file_id: await insertUpload(svc.tdb.db, svc.gw.storage, t, 'video'),
      background_video_url: `${remote.origin}/background.mp4`,
    });
    assertApiError(both, 400, 'invalid_request');
    assert.match(both.body.error.message, /background_video_file_id or background_video_url, not both/);
    assert.equal(await creditsOf(svc.tdb.db, t), 1000);
  });

  test('a retried output step composites the kept presenter clip again, never the composite it already stored; a background that is no video is refused', async () => {
    const storage = svc.gw.storage;
    const jobId = newId('tlk');
    const frame = { width: 360, height: 640 };
    const output = { key: jobOutputKey(storage, jobId, 1, 'mp4'), content_type: 'video/mp4', size: 0 };
    const presenter = await flatClip('white', '360x640', 2);
    await storage.putStream(output.key, presenter, 'video/mp4');
    const backgroundKey = `${storage.jobMediaPrefix(jobId)}/test-background.mp4`;
    await storage.putStream(backgroundKey, backgroundMp4, 'video/mp4');
    const box = presenterBox(frame);
    const centre = [Math.round(box.x + box.width / 2), Math.round(box.y + box.height / 2)] as const;

    const first = await compositeOverBackground(storage, defaultMediaTools, output, backgroundKey, frame, { fresh: true });
    // The retry finds the composite at the output's key (an attempt that stored it, then lost its answer).
    const again = await compositeOverBackground(storage, defaultMediaTools, first, backgroundKey, frame, { fresh: false });
    assert.equal(again.key, output.key);
    const file = join(dir, `${jobId}.mp4`);
    const chunks: Buffer[] = [];
    for await (const c of await storage.getStream(again.key)) chunks.push(c as Buffer);
    await writeFile(file, Buffer.concat(chunks));
    const px = await frameAt(file, 1.5, frame.width, frame.height);
    assert.ok(distance(px(...centre), [255, 255, 255]) < 40, `the presenter, not a composite in a composite, at the box's centre: ${px(...centre).join(',')}`);
    assert.ok(distance(px(20, 20), MAGENTA) < 40);
    assert.ok(Math.abs((await probeMedia(file)).durationSeconds! - 2) < 0.2, "the presenter's length, over a background of 1 s");
    assert.ok(await storage.stat(presenterKeyOf(output.key)), 'the presenter clip is kept beside the output');

    // Stored as video/mp4, but its bytes are a WAV.
    const notVideo = `${storage.jobMediaPrefix(jobId)}/not-a-video.mp4`;
    await storage.putStream(notVideo, await readFile(join(dir, 'speech.wav')), 'video/mp4');
    await assert.rejects(
      compositeOverBackground(storage, defaultMediaTools, again, notVideo, frame, { fresh: false }),
      (err) => err instanceof CompositeError && err.input === 'background' && /the background video is not a supported video/.test(err.message),
    );
    await storage.removePrefix(`jobs/${jobId}/`);
  });
});

describe('talking actor over a background video, on the live route (ElevenLabs speech, fal lipsync: local fakes)', () => {
  let suite: Service;
  let tdb: TestDatabase;
  let gw: InProcessGateway;
  let el: FakeElevenLabs;
  let fal: FakeFal;

  before(async () => {
    [el, fal] = await Promise.all([startFakeElevenLabs(), startFakeFal()]);
    // The lipsync's video: a flat white clip with a tone, served by the loopback "CDN" for every file fal names.
    const lipsync = await flatClip('white', '360x640', 2);
    fal.filesBaseUrl = remote.origin;
    remote.fallback((req, res) => {
      if (/^\/files\/[^/]+\.mp4$/.test(req.url ?? '')) res.writeHead(200, { 'content-type': 'video/mp4' }).end(lipsync);
      else res.writeHead(404).end();
    });
    suite = await startService(
      {
        PROVIDERS_MODE: 'live',
        ...el.env,
        FAL_KEY: fal.key,
        FAL_QUEUE_URL: fal.url,
        FETCH_ALLOW_LOOPBACK_ORIGIN: remote.origin,
        FETCH_EXTRA_CA_FILE: remote.caFile,
        PROVIDER_OUTPUT_HOSTS: '127.0.0.1',
        RECONCILE_INTERVAL_MS: '3600000',
      },
      { roles: 'workflows,io,fetch,provider:elevenlabs,provider:fal' },
    );
    ({ tdb, gw } = suite);
  });

  after(async () => {
    await suite?.close();
    await Promise.all([el?.close(), fal?.close()]);
  });

  test("the lipsync's clip is composited over the background like the local renderer's, and fal never sees the background", async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const up = await multipartUpload(gw.baseUrl, t.apiKey, t.projectId, { name: 'background.mp4', mime: 'video/mp4', bytes: backgroundMp4 });
    assert.equal(up.status, 200, up.text);
    const voice = await insertVoice(tdb.db, { providerVoiceId: [...el.voices][0]! });
    const actor = await insertActor(tdb.db, gw.storage, { defaultVoiceId: voice });
    const created = await c.post('/v1/talking-actors/generate', {
      project_id: t.projectId,
      actor_id: actor,
      script,
      aspect_ratio: '9:16',
      background_video_file_id: up.body.data.id,
    });
    assert.equal(created.status, 200, created.text);
    const job = await waitForJobStatus(c, `/v1/talking-actors/${created.body.data.id}`, ['completed', 'failed']);
    assert.equal(job.status, 'completed', JSON.stringify(job.error));
    assert.equal(job.provider, 'fal');
    const lipsyncBody = JSON.stringify(fal.requestsOf('submit').at(-1)!.json);
    assert.doesNotMatch(lipsyncBody, new RegExp(`${up.body.data.id}|background`), 'the provider is sent the actor and the speech only');

    const file = join(dir, `${job.id}.mp4`);
    await writeFile(file, Buffer.from(await (await fetch((await c.get(`/v1/talking-actors/${job.id}/url`)).body.data.url)).arrayBuffer()));
    const media = await probeMedia(file);
    assert.deepEqual([media.width, media.height, media.hasAudio], [720, 1280, true]);
    assert.ok(Math.abs(media.durationSeconds! - 2) < 0.2, `the lipsync clip's length: ${media.durationSeconds} s`);
    const px = await frameAt(file, 1.5, 720, 1280);
    const box = presenterBox({ width: 720, height: 1280 });
    const centre = [Math.round(box.x + box.width / 2), Math.round(box.y + box.height / 2)] as const;
    assert.ok(distance(px(...centre), [255, 255, 255]) < 40, `the lipsync's clip in the corner: ${px(...centre).join(',')}`);
    assert.ok(distance(px(60, 60), MAGENTA) < 40, `the background elsewhere: ${px(60, 60).join(',')}`);
  });
});
