// The local renderer's media functions, checked by probing what they write with ffprobe.
// Needs ffmpeg, ffprobe and espeak-ng (FFMPEG_PATH / FFPROBE_PATH / ESPEAK_PATH, or on PATH).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { imageSize, frameSize } from '../../shared/catalog.js';
import { crc32 } from 'node:zlib';
import {
  MAX_STILL_SIDE,
  MediaToolError,
  normalizeStill,
  probeMedia,
  renderImage,
  renderImagePixels,
  renderImagePng,
  renderReplaceActor,
  paintGradient,
  renderTalkingActor,
  renderVideo,
  synthesizeSpeech,
  wavDuration,
} from '../../activities/providers/local/media.js';
import { defaultMediaTools, UntrustedMediaError } from '../../activities/providers/media-tools.js';

const ffmpegPath = process.env.FFMPEG_PATH || 'ffmpeg';
const ffprobePath = process.env.FFPROBE_PATH || 'ffprobe';
const espeakPath = process.env.ESPEAK_PATH || 'espeak-ng';
const probe = (path: string) => probeMedia(path, { ffprobePath });
const tools = { ...defaultMediaTools, ffmpegPath, ffprobePath };

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'local-renderer-test-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function writeImage(name: string, prompt: string, width: number, height: number): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, await renderImage({ prompt, width, height }));
  return path;
}

describe('renderImage', () => {
  for (const aspect of ['1:1', '9:16', '16:9']) {
    test(`PNG has the exact pixel size for ${aspect}`, async () => {
      const { width, height } = imageSize(aspect);
      const path = await writeImage(`img-${aspect.replace(':', 'x')}.png`, `a lighthouse at ${aspect}`, width, height);
      const info = await probe(path);
      assert.equal(info.videoCodec, 'png');
      assert.equal(info.width, width);
      assert.equal(info.height, height);
    });
  }

  test('JPEG output has the requested size and codec', async () => {
    const path = join(dir, 'img.jpg');
    await writeFile(path, await renderImage({ prompt: 'a jpeg', width: 640, height: 360, format: 'jpeg', ffmpegPath }));
    const info = await probe(path);
    assert.equal(info.videoCodec, 'mjpeg');
    assert.deepEqual([info.width, info.height], [640, 360]);
  });

  test('same prompt and seed give identical bytes; other prompts or seeds differ', async () => {
    const a1 = await renderImage({ prompt: 'a red fox in snow', width: 256, height: 256, seed: 3 });
    const a2 = await renderImage({ prompt: 'a red fox in snow', width: 256, height: 256, seed: 3 });
    const b = await renderImage({ prompt: 'a blue whale at dusk', width: 256, height: 256, seed: 3 });
    const c = await renderImage({ prompt: 'a red fox in snow', width: 256, height: 256, seed: 4 });
    assert.ok(a1.equals(a2));
    assert.ok(!a1.equals(b));
    assert.ok(!a1.equals(c));
  });

  test('different prompts are visibly different (mean colour distance)', async () => {
    const a = renderImagePixels('a red fox in snow', 128, 128);
    const b = renderImagePixels('a red fox in snow!', 128, 128);
    let diff = 0;
    for (let i = 0; i < a.length; i++) diff += Math.abs(a[i]! - b[i]!);
    assert.ok(diff / a.length > 10, `mean channel difference ${diff / a.length} is too small`);
  });

  test('the gradient copied from one ramp matches the gradient painted pixel by pixel, at every angle', () => {
    const [width, height, lead] = [256, 192, 1];
    for (let k = 0; k <= 96; k++) {
      // Every 3.75°, plus exactly and nearly vertical and horizontal (where the ramp would be huge).
      const angle = k < 96 ? (k * Math.PI) / 48 : Math.PI / 2 + 1e-9;
      const [dx, dy] = [Math.cos(angle), Math.sin(angle)];
      const span = Math.abs(dx) * width + Math.abs(dy) * height;
      const t0 = -(Math.min(0, dx * width) + Math.min(0, dy * height)) / span;
      const paint = (direct: boolean) => {
        const px = Buffer.alloc((lead + width * 3) * height, 7);
        paintGradient(px, lead, width, height, [250, 10, 128], [5, 240, 30], dx / span, dy / span, t0, direct);
        return px;
      };
      const [fast, reference] = [paint(false), paint(true)];
      let worst = 0;
      for (let i = 0; i < fast.length; i++) worst = Math.max(worst, Math.abs(fast[i]! - reference[i]!));
      assert.ok(worst <= 2, `angle ${((angle * 180) / Math.PI).toFixed(2)}°: a channel differs by ${worst}`);
      for (let y = 0; y < height; y++) assert.equal(fast[y * (lead + width * 3)], 7, 'the lead byte of each row is left alone');
    }
  });

  test('the fast painting (ramp windows, shapes blended once per ramp) matches painting pixel by pixel', () => {
    // 60 prompts: every angle band, shapes over the bare gradient and over each other, clipped at edges.
    for (let k = 0; k < 60; k++) {
      const [width, height] = k % 2 ? [240, 160] : [150, 260];
      const fast = renderImagePixels(`prompt ${k}`, width, height);
      const reference = renderImagePixels(`prompt ${k}`, width, height, 0, true);
      let worst = 0;
      for (let i = 0; i < fast.length; i++) worst = Math.max(worst, Math.abs(fast[i]! - reference[i]!));
      assert.ok(worst <= 2, `prompt ${k}: a channel differs by ${worst}`);
    }
  });

  test('rejects an invalid size', async () => {
    await assert.rejects(renderImage({ prompt: 'x', width: 0, height: 10 }), RangeError);
  });
});

describe('renderVideo', () => {
  test('text-only: H.264 of the requested duration and resolution', async () => {
    const { width, height } = frameSize('16:9', '480p');
    const out = join(dir, 'text.mp4');
    await renderVideo({ prompt: 'a paper boat on a river', width, height, durationSeconds: 2, outPath: out, ffmpegPath });
    const info = await probe(out);
    assert.equal(info.videoCodec, 'h264');
    assert.deepEqual([info.width, info.height], [width, height]);
    assert.ok(Math.abs(info.durationSeconds! - 2) <= 0.1, `duration ${info.durationSeconds}`);
    assert.equal(info.hasAudio, false);
  });

  test('with start frame, end frame and references, at 9:16', async () => {
    const { width, height } = frameSize('9:16', '480p');
    const start = await writeImage('start.png', 'start', 320, 240);
    const end = await writeImage('end.png', 'end', 240, 320);
    const ref = await writeImage('ref.png', 'ref', 200, 200);
    const out = join(dir, 'frames.mp4');
    await renderVideo({
      prompt: 'frames',
      width,
      height,
      durationSeconds: 3,
      outPath: out,
      startFrame: start,
      endFrame: end,
      references: [ref, start],
      ffmpegPath,
    });
    const info = await probe(out);
    assert.equal(info.videoCodec, 'h264');
    assert.deepEqual([info.width, info.height], [width, height]);
    assert.ok(Math.abs(info.durationSeconds! - 3) <= 0.1, `duration ${info.durationSeconds}`);
  });

  test('a fractional duration is honoured within 0.1 s', async () => {
    const out = join(dir, 'frac.mp4');
    await renderVideo({ prompt: 'short', width: 320, height: 240, durationSeconds: 1.5, outPath: out, ffmpegPath });
    const info = await probe(out);
    assert.ok(Math.abs(info.durationSeconds! - 1.5) <= 0.1, `duration ${info.durationSeconds}`);
  });

  test('an abort signal kills ffmpeg and rejects', async () => {
    const ac = new AbortController();
    const rendering = renderVideo({
      prompt: 'long',
      width: 640,
      height: 360,
      durationSeconds: 600,
      outPath: join(dir, 'aborted.mp4'),
      ffmpegPath,
      signal: ac.signal,
    });
    setTimeout(() => ac.abort(new Error('cancelled by test')), 200);
    await assert.rejects(rendering, /cancelled by test/);
  });

  test('a broken input fails fast, naming the input: bytes that are no image, and a PNG whose data is broken', { timeout: 30_000 }, async () => {
    const bogus = join(dir, 'bogus.png');
    await writeFile(bogus, 'not an image');
    await assert.rejects(
      renderVideo({ prompt: 'x', width: 320, height: 240, durationSeconds: 1, outPath: join(dir, 'bogus.mp4'), startFrame: bogus, ffmpegPath }),
      (err: unknown) => err instanceof UntrustedMediaError && err.problem === 'unsupported' && /^the start image /.test(err.message),
    );
    const broken = join(dir, 'broken.png');
    await writeFile(broken, Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 0xab)]));
    await assert.rejects(
      renderVideo({ prompt: 'x', width: 320, height: 240, durationSeconds: 1, outPath: join(dir, 'broken.mp4'), startFrame: broken, ffmpegPath }),
      (err: unknown) => err instanceof UntrustedMediaError && err.problem === 'corrupt' && /^the start image /.test(err.message),
    );
  });

  test('a missing binary is reported by name', async () => {
    await assert.rejects(
      renderVideo({ prompt: 'x', width: 320, height: 240, durationSeconds: 1, outPath: join(dir, 'none.mp4'), ffmpegPath: '/nonexistent/ffmpeg' }),
      /\/nonexistent\/ffmpeg not found/,
    );
  });
});

describe('synthesizeSpeech', () => {
  const text = 'The quick brown fox jumps over the lazy dog, and then it runs back home again.';

  test('speed 1.2 is shorter than speed 0.7', async () => {
    const slow = await synthesizeSpeech({ text, ttsVoice: 'en-us+f3', speed: 0.7, outPath: join(dir, 'slow.wav'), espeakPath });
    const fast = await synthesizeSpeech({ text, ttsVoice: 'en-us+f3', speed: 1.2, outPath: join(dir, 'fast.wav'), espeakPath });
    assert.ok(fast.durationSeconds < slow.durationSeconds * 0.8, `fast ${fast.durationSeconds} s vs slow ${slow.durationSeconds} s`);
  });

  test('the reported duration matches ffprobe and the WAV header', async () => {
    const out = join(dir, 'speech.wav');
    const { durationSeconds } = await synthesizeSpeech({ text, ttsVoice: 'en-us', outPath: out, espeakPath });
    const info = await probe(out);
    assert.equal(info.hasAudio, true);
    assert.ok(Math.abs(info.durationSeconds! - durationSeconds) < 0.05);
    assert.equal(wavDuration(await readFile(out)), durationSeconds);
  });

  test('text starting with a dash is spoken, not read as an option', async () => {
    const { durationSeconds } = await synthesizeSpeech({ text: '--help me please', ttsVoice: 'en-us', outPath: join(dir, 'dash.wav'), espeakPath });
    assert.ok(durationSeconds > 0.3);
  });

  test('rejects a voice name that is not a plain espeak-ng voice', async () => {
    await assert.rejects(synthesizeSpeech({ text: 'hi', ttsVoice: 'en us; rm', outPath: join(dir, 'bad.wav'), espeakPath }), RangeError);
  });
});

describe('renderTalkingActor', () => {
  test('has an H.264 video and an AAC audio stream whose length follows the script', async () => {
    const actor = await writeImage('actor.png', 'an actor', 300, 400);
    const lengths: number[] = [];
    for (const [i, script] of [
      'Hello there.',
      'Hello there. This is a much longer script, so the talking actor video must run for clearly longer.',
    ].entries()) {
      const wav = join(dir, `ta-${i}.wav`);
      const speech = await synthesizeSpeech({ text: script, ttsVoice: 'en-us+m3', outPath: wav, espeakPath });
      const out = join(dir, `ta-${i}.mp4`);
      await renderTalkingActor({ actorImage: actor, audioPath: wav, width: 360, height: 640, outPath: out, ffmpegPath });
      const info = await probe(out);
      assert.equal(info.videoCodec, 'h264');
      assert.equal(info.audioCodec, 'aac');
      assert.equal(info.hasAudio, true);
      assert.deepEqual([info.width, info.height], [360, 640]);
      assert.ok(Math.abs(info.durationSeconds! - speech.durationSeconds) <= 0.5, `video ${info.durationSeconds} s, speech ${speech.durationSeconds} s`);
      lengths.push(info.durationSeconds!);
    }
    assert.ok(lengths[1]! > lengths[0]! + 2, `longer script gives ${lengths[1]} s vs ${lengths[0]} s`);
  });
});

describe('renderReplaceActor', () => {
  test('loops a short motion video to the requested duration and size', async () => {
    const motion = join(dir, 'motion.mp4');
    await renderVideo({ prompt: 'motion', width: 320, height: 240, durationSeconds: 1, outPath: motion, ffmpegPath });
    const character = await writeImage('character.png', 'character', 200, 300);
    const { width, height } = frameSize('9:16', '480p');
    const out = join(dir, 'replace.mp4');
    await renderReplaceActor({ characterImage: character, motionVideo: motion, width, height, durationSeconds: 2.5, outPath: out, ffmpegPath });
    const info = await probe(out);
    assert.equal(info.videoCodec, 'h264');
    assert.deepEqual([info.width, info.height], [width, height]);
    assert.ok(Math.abs(info.durationSeconds! - 2.5) <= 0.1, `duration ${info.durationSeconds}`);
  });

  test('a motion video that cannot be decoded fails fast', { timeout: 30_000 }, async () => {
    const bogus = join(dir, 'bogus.mp4');
    await writeFile(bogus, 'not a video');
    const character = await writeImage('character2.png', 'character', 64, 64);
    await assert.rejects(
      renderReplaceActor({
        characterImage: character,
        motionVideo: bogus,
        width: 320,
        height: 320,
        durationSeconds: 2,
        outPath: join(dir, 'bogus-replace.mp4'),
        ffmpegPath,
      }),
      MediaToolError,
    );
  });

  test('trims a longer motion video and keeps its audio', async () => {
    const wav = join(dir, 'motion.wav');
    await synthesizeSpeech({ text: 'This motion clip has a voice track that lasts a few seconds at least.', ttsVoice: 'en-us', outPath: wav, espeakPath });
    const motion = join(dir, 'motion-audio.mp4');
    const still = await writeImage('motion-still.png', 'dancer', 320, 320);
    await renderTalkingActor({ actorImage: still, audioPath: wav, width: 320, height: 320, outPath: motion, ffmpegPath });
    const out = join(dir, 'replace-trim.mp4');
    await renderReplaceActor({ characterImage: still, motionVideo: motion, width: 480, height: 480, durationSeconds: 2, outPath: out, ffmpegPath });
    const info = await probe(out);
    assert.deepEqual([info.width, info.height], [480, 480]);
    assert.ok(Math.abs(info.durationSeconds! - 2) <= 0.1, `duration ${info.durationSeconds}`);
    assert.equal(info.hasAudio, true);
  });
});

/** A real small PNG whose IHDR then claims width×height (a decompression bomb's declaration). */
async function pngDeclaring(width: number, height: number): Promise<Buffer> {
  const png = Buffer.from(await renderImagePng('a small real picture', 64, 64));
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  png.writeUInt32BE(crc32(png.subarray(12, 29)), 29);
  return png;
}

describe('untrusted stills and videos', () => {
  test('a PNG declaring 20000×20000 pixels is refused for its size before it is decoded', async () => {
    const bomb = join(dir, 'bomb.png');
    await writeFile(bomb, await pngDeclaring(20_000, 20_000));
    // Refused for its size, not for its missing pixel data.
    await assert.rejects(
      normalizeStill(bomb, dir, 'bomb-out', tools),
      (err: unknown) => err instanceof UntrustedMediaError && err.problem === 'dimensions' && /20000×20000/.test(err.message),
    );
  });

  test('a PNG just over the pixel cap (7000×6000 = 42 Mpx, which ffmpeg alone would try to decode) is refused', async () => {
    const big = join(dir, 'big.png');
    await writeFile(big, await pngDeclaring(7_000, 6_000));
    await assert.rejects(
      normalizeStill(big, dir, 'big-out', tools),
      (err: unknown) => err instanceof UntrustedMediaError && /7000×6000 .*the limit is 40\.0 Mpx/.test(err.message),
    );
  });

  test('a large still is downscaled to fit the still box, keeping its aspect ratio', async () => {
    const wide = await writeImage('wide.png', 'a wide panorama', 3000, 1500);
    const out = await normalizeStill(wide, dir, 'wide-out', tools);
    const info = await probe(out);
    assert.equal(info.width, MAX_STILL_SIDE);
    assert.equal(info.height, MAX_STILL_SIDE / 2);
    const small = await writeImage('small.png', 'a small one', 320, 200);
    const kept = await probe(await normalizeStill(small, dir, 'small-out', tools));
    assert.deepEqual([kept.width, kept.height], [320, 200], 'small stills are not upscaled');
  });

  test('a file that is no accepted image is refused whatever its name says', async () => {
    const text = join(dir, 'not-an-image.png');
    await writeFile(text, 'just some text, named like a picture');
    await assert.rejects(normalizeStill(text, dir, 'text-out', tools), (err: unknown) => err instanceof UntrustedMediaError && err.problem === 'unsupported');
    assert.ok(new UntrustedMediaError('corrupt', 'x') instanceof MediaToolError, 'callers that catch MediaToolError still catch refusals');
  });
});
