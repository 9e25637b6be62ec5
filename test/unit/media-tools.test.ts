// The one path tenant media takes to ffmpeg/ffprobe (activities/providers/media-tools.ts): the type
// from the bytes, the declared frame size and length checked by a capped probe before any decode,
// and the caps every run carries. Needs ffmpeg, ffprobe and prlimit (on PATH or FFMPEG_PATH, …).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import {
  defaultMediaTools,
  inspectUntrusted,
  mediaToolRuns,
  mediaToolsFrom,
  outputThreadArgs,
  runTool,
  setMediaToolConcurrency,
  untrustedInputArgs,
  UntrustedMediaError,
  type MediaTools,
} from '../../activities/providers/media-tools.js';
import { renderVideo } from '../../activities/providers/local/media.js';
import { oversizedMp4 } from '../support/oversized-video.js';

const tools: MediaTools = { ...defaultMediaTools, ffmpegPath: process.env.FFMPEG_PATH || 'ffmpeg', ffprobePath: process.env.FFPROBE_PATH || 'ffprobe' };
let dir: string;
let smallVideo: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'media-tools-test-'));
  smallVideo = join(dir, 'small.mp4');
  await renderVideo({ prompt: 'small', width: 320, height: 240, durationSeconds: 2, outPath: smallVideo, ffmpegPath: tools.ffmpegPath });
});
after(() => rm(dir, { recursive: true, force: true }));

const refusedFor = (problem: string, message: RegExp) => (err: unknown) =>
  err instanceof UntrustedMediaError && err.problem === problem && message.test(err.message);

describe('inspecting a tenant file', () => {
  test('an MP4 declaring 30,000×30,000 frames is refused for its size, naming it', async () => {
    const path = join(dir, 'bomb-30k.mp4');
    await writeFile(path, await oversizedMp4(30_000, 30_000, tools.ffmpegPath));
    await assert.rejects(
      inspectUntrusted(path, 'video', 'the motion video', tools),
      refusedFor('dimensions', /^the motion video declares 30000×30000 frames \(900\.0 Mpx\); the limit is 16\.8 Mpx$/),
    );
  });

  test('an MP4 declaring 16,000×16,000 frames (which ffmpeg itself would decode) is refused by the cap', async () => {
    const path = join(dir, 'bomb-16k.mp4');
    await writeFile(path, await oversizedMp4(16_000, 16_000, tools.ffmpegPath));
    await assert.rejects(inspectUntrusted(path, 'video', 'the motion video', tools), refusedFor('dimensions', /16000×16000/));
    // The same file is within a cap raised above it: the refusal is the cap's, not the file's.
    const inspected = await inspectUntrusted(path, 'video', 'the motion video', { ...tools, maxVideoPixels: 16_000 * 16_000 }).catch((err: Error) => err);
    assert.ok(!(inspected instanceof UntrustedMediaError && inspected.problem === 'dimensions'), String(inspected));
  });

  test('the demuxer follows the bytes, not the name: an MP4 named .png is a video read with mov', async () => {
    const misnamed = join(dir, 'really-a-video.png');
    await writeFile(misnamed, await readFile(smallVideo));
    const input = await inspectUntrusted(misnamed, 'video', 'the motion video', tools);
    assert.deepEqual([input.mime, input.demuxer, input.width, input.height], ['video/mp4', 'mov', 320, 240]);
    assert.ok(Math.abs(input.durationSeconds! - 2) < 0.2, `duration ${input.durationSeconds}`);
    await assert.rejects(
      inspectUntrusted(misnamed, 'image', "the actor's image", tools),
      refusedFor('unsupported', /^the actor's image is not a supported image/),
    );
  });

  test('a video longer than the length cap is refused', async () => {
    await assert.rejects(
      inspectUntrusted(smallVideo, 'video', 'the motion video', { ...tools, maxSeconds: 1 }),
      refusedFor('duration', /lasts 2 s; the limit is 1 s/),
    );
  });

  test('bytes that are no accepted media are refused before any tool runs', async () => {
    const junk = join(dir, 'junk.mp4');
    await writeFile(junk, Buffer.alloc(10_000, 7));
    await assert.rejects(
      inspectUntrusted(junk, 'video', 'the motion video', { ...tools, ffprobePath: '/nonexistent/ffprobe' }),
      refusedFor('unsupported', /not a supported video/),
    );
  });
});

describe('the caps of a run', () => {
  test('input arguments: threads, the pixel cap, the length cap and the demuxer, before -i', async () => {
    const input = await inspectUntrusted(smallVideo, 'video', 'the motion video', tools);
    assert.deepEqual(untrustedInputArgs(input, tools), ['-threads', '2', '-max_pixels', String(4096 * 4096), '-t', '600', '-f', 'mov', '-i', smallVideo]);
    assert.deepEqual(outputThreadArgs(tools), ['-filter_threads', '2', '-filter_complex_threads', '2', '-threads', '2']);
  });

  test('a tool started with a memory cap runs under that address-space limit (prlimit)', async () => {
    const out = await runTool('sh', ['-c', 'ulimit -v'], { stdout: true, memoryBytes: 256 * 1024 * 1024, prlimitPath: tools.prlimitPath });
    assert.equal(out.toString().trim(), String(256 * 1024));
  });

  test('MEDIA_TOOL_CONCURRENCY: a run beyond the cap waits for its turn, and an aborted wait leaves the queue', async () => {
    const fifo = join(dir, 'turns.fifo');
    execFileSync('mkfifo', [fifo]);
    setMediaToolConcurrency(1);
    try {
      // The first run blocks until the test writes to the FIFO.
      const first = runTool('cat', [fifo], { stdout: true });
      const second = runTool('sh', ['-c', 'echo second'], { stdout: true });
      const gone = new AbortController();
      const third = runTool('sh', ['-c', 'echo third'], { stdout: true, signal: gone.signal });
      assert.deepEqual(mediaToolRuns(), { running: 1, waiting: 2 });
      gone.abort(new Error('the activity was canceled'));
      await assert.rejects(third, /the activity was canceled/);
      assert.deepEqual(mediaToolRuns(), { running: 1, waiting: 1 });
      await writeFile(fifo, 'first\n');
      assert.equal((await first).toString(), 'first\n');
      assert.equal((await second).toString(), 'second\n');
      assert.deepEqual(mediaToolRuns(), { running: 0, waiting: 0 });
    } finally {
      setMediaToolConcurrency(0);
    }
  });

  test('the configuration sets the caps', () => {
    const t = mediaToolsFrom({
      MEDIA_TOOL_MEMORY_MB: 0,
      MEDIA_TOOL_THREADS: 1,
      MEDIA_INPUT_MAX_SECONDS: 30,
      MEDIA_INPUT_MAX_VIDEO_PIXELS: 1000,
      UPLOAD_MAX_IMAGE_PIXELS: 2000,
    });
    assert.deepEqual([t.memoryBytes, t.threads, t.maxSeconds, t.maxVideoPixels, t.maxImagePixels], [0, 1, 30, 1000, 2000]);
  });
});
