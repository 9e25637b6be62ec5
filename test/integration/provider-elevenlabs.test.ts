// Contract tests of the talking actor's two provider steps, called as the generation workflow calls
// them: ElevenLabs text-to-speech (a local server speaking its documented protocol) stored in real
// MinIO by the ElevenLabs adapter's speech step, then fal's image + audio lipsync model (a local fal
// queue) submitted by the fal adapter with that speech.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createElevenLabsAdapter } from '../../providers/elevenlabs/adapter.js';
import { createFalAdapter } from '../../providers/fal/adapter.js';
import type { ProviderAdapter, ProviderRequest } from '../../activities/providers/types.js';
import { ProviderError } from '../../activities/providers/types.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-providers/elevenlabs.js';
import { startFakeFal, type FakeFal } from '../support/fake-providers/fal.js';
import { probeUrl } from '../support/fixtures.js';
import { errorOf, pollToEnd, providerContext, requestFor, stackStorage, storeInput, testVoice } from '../support/fake-providers/context.js';

async function readAll(s: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('talking actor: the ElevenLabs speech step, then the fal lipsync', () => {
  let el: FakeElevenLabs;
  let fal: FakeFal;
  const storage = stackStorage();
  const ctx = providerContext(storage);
  let speaker: ReturnType<typeof createElevenLabsAdapter>;
  let lipsync: ProviderAdapter;
  const script = 'Hello there. This is a short script for the talking actor to speak.';

  before(async () => {
    [el, fal] = await Promise.all([startFakeElevenLabs(), startFakeFal()]);
    speaker = createElevenLabsAdapter({ key: el.key, baseUrl: el.url, timeoutMs: 2000 });
    lipsync = createFalAdapter({ key: fal.key, queueUrl: fal.url, timeoutMs: 2000 });
  });

  /** The two steps as the workflow runs them: the speech step, then the route's submit carrying its speech. */
  const bothSteps = async (req: ProviderRequest) => {
    const speech = await speaker.speak(req, ctx);
    return { speech, ref: await lipsync.submit({ ...req, speech }, ctx) };
  };
  after(() => Promise.all([el.close(), fal.close()]));

  const talking = async (over: Parameters<typeof requestFor>[1] = {}) =>
    requestFor('talking-actor', { script, voice: testVoice, inputs: [await storeInput(storage, 'actor_image')], ...over });

  test('speaks the script with the mapped voice settings, stores the speech, and lipsyncs it on fal', async () => {
    const req = await talking({ voiceOptions: { speed: 1.2, stability: 0.3, similarity: 0.9, style: 0.2 } });
    const { speech, ref } = await bothSteps(req);

    const tts = el.requestsOf('tts').at(-1)!;
    assert.equal(tts.path, `/v1/text-to-speech/${testVoice.providerVoiceId}`);
    assert.equal(tts.query.get('output_format'), 'pcm_24000');
    assert.equal(tts.headers['xi-api-key'], el.key);
    assert.deepEqual(tts.json, {
      text: script,
      model_id: 'eleven_multilingual_v2',
      voice_settings: { stability: 0.3, similarity_boost: 0.9, style: 0.2, speed: 1.2 },
    });

    const speechKey = `${storage.jobMediaPrefix(req.jobId)}/speech.wav`;
    assert.equal(speech.key, speechKey);
    const wav = await readAll(await storage.getStream(speechKey));
    assert.equal(wav.subarray(0, 4).toString('ascii'), 'RIFF');
    assert.equal(wav.subarray(8, 12).toString('ascii'), 'WAVE');
    assert.equal(wav.readUInt32LE(24), 24_000);
    const seconds = (wav.length - 44) / 48_000;
    assert.ok(Math.abs(seconds - (script.length * 0.06) / 1.2) < 0.01, `speech lasts ${seconds} s`);
    assert.equal(speech.seconds, seconds);

    const sent = fal.requestsOf('submit').at(-1)!;
    assert.equal(sent.path, '/fal-ai/infinitalk');
    const body = sent.json as Record<string, unknown>;
    assert.match(String(body.image_url), /^http/);
    assert.match(String(body.audio_url), /speech\.wav/);
    assert.equal(body.resolution, '720p');
    // The frames the speech needs at 25 fps, rounded up to InfiniteTalk's 4n+1 counts.
    const needed = Math.ceil(seconds * 25) + 1;
    assert.equal((Number(body.num_frames) - 1) % 4, 0, `num_frames ${String(body.num_frames)} is 4n+1`);
    assert.ok(Number(body.num_frames) >= needed && Number(body.num_frames) < needed + 4);
    const fetched = await fetch(String(body.audio_url));
    assert.equal(fetched.headers.get('content-type'), 'audio/wav');

    const last = (await pollToEnd(lipsync, ref, ctx)).at(-1)!;
    assert.equal(last.state, 'succeeded');
    assert.equal(last.outputs![0]!.contentType, 'video/mp4');
  });

  test('only the voice options given are sent (clamped), so the voice keeps its own tuning for the rest', async () => {
    await speaker.speak(await talking({ voiceOptions: { speed: 3 } }), ctx);
    assert.deepEqual((el.requestsOf('tts').at(-1)!.json as { voice_settings: unknown }).voice_settings, { speed: 1.2 });
    await speaker.speak(await talking({ voiceOptions: undefined }), ctx);
    assert.equal('voice_settings' in (el.requestsOf('tts').at(-1)!.json as object), false);
  });

  test('a field ElevenLabs does not know is refused by the fake (422), as the real API validates', async () => {
    const res = await fetch(`${el.url}/v1/text-to-speech/${testVoice.providerVoiceId}?output_format=pcm_24000`, {
      method: 'POST',
      headers: { 'xi-api-key': el.key, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hi', model_id: 'eleven_multilingual_v2', voice_settings: { similarity: 0.5 } }),
    });
    assert.equal(res.status, 422);
    assert.match(JSON.stringify(await res.json()), /voice_settings/);
  });

  test('speech longer than one lipsync video can carry fails the job (final) instead of being cut short', async () => {
    const lipsyncs = fal.requestsOf('submit').length;
    // 0.06 s per character: 500 characters speak for 30 s, past InfiniteTalk's 721 frames (28.8 s).
    const err = await errorOf(async () => bothSteps(await talking({ script: 'a'.repeat(500) })));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, false);
    assert.match(err.message, /the speech lasts 30\.0 s, longer than the 28\.8 s one lipsync video can carry/);
    assert.equal(fal.requestsOf('submit').length, lipsyncs, 'nothing was sent to the lipsync model');
  });

  test('the aspect ratio applies live: the actor image handed to the lipsync model is cropped to it', async () => {
    for (const [aspectRatio, width, height] of [
      ['16:9', 1280, 720],
      ['9:16', 720, 1280],
      ['1:1', 720, 720],
    ] as const) {
      await bothSteps(await talking({ aspectRatio }));
      const sent = await probeUrl(String((fal.requestsOf('submit').at(-1)!.json as { image_url: string }).image_url));
      assert.deepEqual([sent.width, sent.height], [width, height]);
    }
  });

  test('a 503 from text-to-speech is retryable; a retried speech step pays for the speech once', async () => {
    el.script('tts', { status: 503, body: { detail: { status: 'service_unavailable', message: 'Service is temporarily overloaded' } } });
    const req = await talking();
    const err = await errorOf(() => speaker.speak(req, ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, true);
    assert.match(err.message, /ElevenLabs text-to-speech: provider error \(HTTP 503\): Service is temporarily overloaded/);

    const ttsCalls = el.requestsOf('tts').length;
    const { speech, ref } = await bothSteps(req);
    // The step again for the same job (its activity retried after a lost answer, or a reset run) finds the stored speech.
    assert.deepEqual(await speaker.speak(req, ctx), speech);
    assert.equal(el.requestsOf('tts').length, ttsCalls + 1);
    assert.equal((await pollToEnd(lipsync, ref, ctx)).at(-1)!.state, 'succeeded');
  });

  test('a 429 with Retry-After is retryable after the hint', async () => {
    el.script('tts', {
      status: 429,
      headers: { 'retry-after': '3' },
      body: { detail: { status: 'too_many_concurrent_requests', message: 'Too many concurrent requests' } },
    });
    const err = await errorOf(async () => speaker.speak(await talking(), ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, true);
    assert.equal(err.retryAfterMs, 3000);
  });

  test('an unknown voice and a missing voice id are terminal, with clear messages', async () => {
    const err = await errorOf(async () => speaker.speak(await talking({ voice: { ...testVoice, providerVoiceId: 'no-such-voice' } }), ctx));
    assert.equal((err as ProviderError).retryable, false);
    assert.match(err.message, /request rejected \(HTTP 404\): A voice with the voice_id no-such-voice was not found\. \(voice_not_found\)/);

    const none = await errorOf(async () => speaker.speak(await talking({ voice: { ...testVoice, providerVoiceId: null } }), ctx));
    assert.equal((none as ProviderError).retryable, false);
    assert.match(none.message, /has no ElevenLabs voice id/);
  });

  test('a JSON answer where audio was expected is a clear malformed-answer error', async () => {
    el.script('tts', { status: 200, body: { detail: 'ok' } });
    const err = await errorOf(async () => speaker.speak(await talking(), ctx));
    assert.equal(err.message, 'ElevenLabs text-to-speech: malformed answer: expected PCM audio, got application/json');
  });

  test('talking-actor-v3 asks Eleven v3 for the same pcm_24000 speech (one format list for every model) and lipsyncs it', async () => {
    const req = requestFor('talking-actor-v3', {
      script,
      voice: testVoice,
      inputs: [await storeInput(storage, 'actor_image')],
      voiceOptions: { stability: 0.5 },
    });
    const { ref } = await bothSteps(req);
    const tts = el.requestsOf('tts').at(-1)!;
    assert.equal(tts.query.get('output_format'), 'pcm_24000');
    assert.deepEqual(tts.json, { text: script, model_id: 'eleven_v3', voice_settings: { stability: 0.5 } });
    assert.ok(el.models.has('eleven_v3'), "the fake lists eleven_v3 among the models it serves, as ElevenLabs' model list does");
    const wav = await readAll(await storage.getStream(`${storage.jobMediaPrefix(req.jobId)}/speech.wav`));
    assert.equal(wav.readUInt32LE(24), 24_000);
    assert.equal(fal.requestsOf('submit').at(-1)!.path, '/fal-ai/infinitalk');
    assert.equal((await pollToEnd(lipsync, ref, ctx)).at(-1)!.state, 'succeeded');
  });

  test('speech answered in another encoding (an MP3 or a WAV, whatever its content type says) is refused, never stored or lipsynced as PCM', async () => {
    const mp3 = Buffer.concat([Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00', 'latin1'), Buffer.alloc(9600, 0x55)]);
    const wav = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(9600, 0x11)]);
    for (const [headers, body, said] of [
      [{ 'content-type': 'audio/mpeg' }, mp3, 'expected PCM audio, got audio/mpeg'],
      [{ 'content-type': 'application/octet-stream' }, mp3, 'expected raw PCM audio, got MP3 (ID3) data'],
      [{ 'content-type': 'audio/pcm' }, wav, 'expected raw PCM audio, got WAV (RIFF) data'],
    ] as const) {
      const lipsyncs = fal.requestsOf('submit').length;
      el.script('tts', { status: 200, headers, body });
      const req = requestFor('talking-actor-v3', { script, voice: testVoice, inputs: [await storeInput(storage, 'actor_image')] });
      const err = await errorOf(() => bothSteps(req));
      assert.ok(err instanceof ProviderError);
      assert.equal(err.retryable, false);
      assert.equal(err.message, `ElevenLabs text-to-speech: malformed answer: ${said}`);
      assert.equal(await storage.stat(`${storage.jobMediaPrefix(req.jobId)}/speech.wav`), null, 'no speech stored');
      assert.equal(fal.requestsOf('submit').length, lipsyncs, 'nothing sent to the lipsync model');
    }
  });

  test('cancel stops the lipsync request on fal', async () => {
    const { ref } = await bothSteps(await talking());
    await lipsync.cancel(ref, ctx);
    assert.equal(fal.requestsOf('cancel').at(-1)!.path, `/fal-ai/infinitalk/requests/${String(ref.requestId)}/cancel`);
    const last = (await pollToEnd(lipsync, ref, ctx)).at(-1)!;
    assert.equal(last.state, 'failed');
  });

  test("the lipsync without its speech step's audio is refused before anything is sent to fal", async () => {
    const lipsyncs = fal.requestsOf('submit').length;
    const err = await errorOf(async () => lipsync.submit(await talking(), ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, false);
    assert.match(err.message, /needs the actor's image and the speech step's audio/);
    assert.equal(fal.requestsOf('submit').length, lipsyncs);
  });

  test('ElevenLabs serves no route of its own: a submit is refused (final), and a cancel has nothing to stop', async () => {
    const ttsCalls = el.requestsOf('tts').length;
    const err = await errorOf(async () => speaker.submit(await talking(), ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, false);
    assert.match(err.message, /speech steps only/);
    assert.equal(el.requestsOf('tts').length, ttsCalls, 'nothing spoken');
    assert.deepEqual(await speaker.cancel({ provider: 'elevenlabs' }, ctx), { confirmed: false });
  });
});
