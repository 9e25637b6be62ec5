// Talking-actor pipeline: ElevenLabs text-to-speech, then an image + audio lipsync model on fal.
//
// 1. POST {base}/v1/text-to-speech/{voice_id}?output_format=pcm_24000 with `xi-api-key` and
//    { text, model_id, voice_settings? } (providers/elevenlabs/contract.ts; voice_settings carries only the
//    options the request gave, so each voice keeps its own stored tuning) → raw 16-bit mono PCM at 24 kHz. We wrap it in a WAV header (its length is then known exactly) and store it at
//    jobs/<jobId>/speech.wav; a retried submit reuses the stored speech instead of paying for it twice.
// 2. Submit fal's lipsync model (catalog secondaryModelIds.lipsync, fal-ai/infinitalk) with the
//    actor's image and the speech as presigned URLs; poll and cancel are the fal queue's. InfiniteTalk
//    takes at most 721 frames (28.8 s at 25 fps): the gateway refuses longer scripts at create time, and
//    speech that still comes out longer fails the job (refunded) instead of being cut short.
import type { PollResult, ProviderAdapter, ProviderContext, ProviderRef, ProviderRequest, VoiceSettings } from '../../activities/providers/types.js';
import { ProviderError } from '../../activities/providers/types.js';
import type { AdapterModule } from '../../activities/providers/adapter-module.js';
import { joinUrl, malformed, providerFetch, readText, type HttpCallOptions } from '../../activities/providers/http.js';
import { classify, errorOfRow } from '../../activities/providers/error-table.js';
import { elevenlabsErrors, elevenlabsFacts } from './errors.js';
import { conformActorImage } from '../../activities/providers/conform.js';
import { createFalQueueClient, falConfigFrom, falOutputHeaders, isFalRef, type FalConfig, type FalRef } from '../fal/adapter.js';
import type { ElevenLabsTextToSpeechBody, ElevenLabsVoiceSettings } from './contract.js';
import { infinitalkFps, infinitalkMaxFrames, infinitalkMinFrames, type FalInput } from '../fal/contract.js';
import { longestCallMs } from '../../activities/providers/call-timeouts.js';
import { allOf, oneOf } from '../../activities/providers/body-check.js';

interface ElevenLabsConfig {
  key: string;
  baseUrl: string;
  fal: FalConfig;
  timeoutMs?: number;
}

interface TalkingActorRef {
  provider: 'elevenlabs';
  jobId: string;
  speechKey: string;
  speechSeconds: number;
  lipsync: FalRef;
}

const sampleRate = 24_000;

// pcm_24000 is in the one output_format list ElevenLabs' API definition gives every model (eleven_v3 too), but
// an answer in another encoding (an MP3, a WAV, an Ogg/Opus stream: the formats that list also offers) must not
// be wrapped as PCM and lipsynced as noise: it is refused by its content type or its first bytes.
const encodedAudioType = /mpeg|mp3|ogg|opus|wav|wave|flac|basic|alaw|ulaw|mulaw/i;

/** The container or codec an audio answer starts with (ID3/MPEG frame, RIFF, Ogg, fLaC), or undefined for raw PCM. */
function encodedAudioMagic(b: Buffer): string | undefined {
  const head = b.subarray(0, 4).toString('latin1');
  if (head.startsWith('ID3')) return 'MP3 (ID3)';
  if (head === 'RIFF') return 'WAV (RIFF)';
  if (head === 'OggS') return 'Ogg';
  if (head === 'fLaC') return 'FLAC';
  return undefined;
}

const infinitalkResolutions = allOf<NonNullable<FalInput<'fal-ai/infinitalk'>['resolution']>>()(['480p', '720p']);

/**
 * ElevenLabs `voice_settings` from our voice_options (speed 0.7–1.2, the others 0–1): only the options
 * the request gave, so every other setting stays the voice's own; undefined when none was given.
 */
export function elevenLabsVoiceSettings(v: VoiceSettings | undefined): ElevenLabsVoiceSettings | undefined {
  const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));
  const out: ElevenLabsVoiceSettings = {};
  if (v?.stability !== undefined) out.stability = clamp(v.stability, 0, 1);
  if (v?.similarity !== undefined) out.similarity_boost = clamp(v.similarity, 0, 1);
  if (v?.style !== undefined) out.style = clamp(v.style, 0, 1);
  if (v?.speed !== undefined) out.speed = clamp(v.speed, 0.7, 1.2);
  return Object.keys(out).length ? out : undefined;
}

/**
 * InfiniteTalk's num_frames for speech of `seconds`, or undefined when it is longer than one request
 * can carry: the frames the speech needs, rounded up to the 4n+1 counts fal documents (41, 145, 721).
 */
export function lipsyncFrames(seconds: number): number | undefined {
  const needed = Math.max(infinitalkMinFrames, Math.ceil(seconds * infinitalkFps) + 1);
  const frames = 4 * Math.ceil((needed - 1) / 4) + 1;
  return frames > infinitalkMaxFrames ? undefined : frames;
}

export function createElevenLabsAdapter(
  cfg: ElevenLabsConfig,
): ProviderAdapter & { synthesize(req: ProviderRequest, ctx: ProviderContext): Promise<{ key: string; seconds: number }> } {
  // A long script can take minutes to speak.
  const timeoutMs = cfg.timeoutMs ?? longestCallMs.elevenlabs;
  const fal = createFalQueueClient(cfg.fal);
  const opts = (what: string, ctx: ProviderContext): HttpCallOptions => ({
    provider: 'ElevenLabs',
    what,
    timeoutMs,
    signal: ctx.signal,
    secrets: [cfg.key, cfg.fal.key],
  });

  async function synthesize(req: ProviderRequest, ctx: ProviderContext): Promise<{ key: string; seconds: number }> {
    const key = `${ctx.storage.jobMediaPrefix(req.jobId)}/speech.wav`;
    const existing = await ctx.storage.stat(key);
    if (existing && existing.size > 44) return { key, seconds: (existing.size - 44) / (sampleRate * 2) };

    const voiceId = req.voice?.providerVoiceId;
    if (!voiceId) throw new ProviderError(`voice ${req.voice?.id ?? '(none)'} has no ElevenLabs voice id`, { retryable: false });
    if (!req.script?.trim()) throw new ProviderError('the talking-actor script is empty', { retryable: false });

    const o = opts('text-to-speech', ctx);
    const url = new URL(joinUrl(cfg.baseUrl, `/v1/text-to-speech/${encodeURIComponent(voiceId)}`));
    url.searchParams.set('output_format', `pcm_${sampleRate}`);
    const res = await providerFetch(
      url.toString(),
      {
        method: 'POST',
        headers: { 'xi-api-key': cfg.key, 'content-type': 'application/json', accept: 'audio/pcm, application/octet-stream' },
        body: JSON.stringify({
          text: req.script,
          model_id: req.providerModelId ?? req.route.providerModelId,
          voice_settings: elevenLabsVoiceSettings(req.voiceOptions),
        } satisfies ElevenLabsTextToSpeechBody),
      },
      o,
    );
    if (!res.ok) {
      const facts = elevenlabsFacts(res, await readText(res, o));
      throw errorOfRow(classify(elevenlabsErrors, facts), facts, o);
    }
    const type = res.headers.get('content-type') ?? '';
    if (/json|text|html/i.test(type) || encodedAudioType.test(type)) throw malformed(o, `expected PCM audio, got ${type.split(';')[0]}`);
    let pcm: Buffer;
    try {
      pcm = Buffer.from(await res.arrayBuffer());
    } catch {
      throw new ProviderError('ElevenLabs text-to-speech: the audio was cut off', { retryable: true });
    }
    const container = encodedAudioMagic(pcm);
    if (container) throw malformed(o, `expected raw PCM audio, got ${container} data`);
    if (pcm.length < sampleRate / 10 || pcm.length % 2 !== 0) throw malformed(o, `the audio has ${pcm.length} bytes, not 16-bit PCM speech`);
    const wav = Buffer.concat([wavHeader(pcm.length, sampleRate), pcm]);
    await ctx.storage.putStream(key, wav, 'audio/wav', wav.length);
    return { key, seconds: pcm.length / (sampleRate * 2) };
  }

  const refOf = (ref: ProviderRef): TalkingActorRef => {
    const r = ref as unknown as Partial<TalkingActorRef>;
    if (!r.lipsync || !isFalRef(r.lipsync)) throw new ProviderError('talking actor: the stored provider ref is incomplete', { retryable: false });
    return r as TalkingActorRef;
  };

  return {
    name: 'elevenlabs',
    /** The speech step alone (stored at jobs/<jobId>/speech.wav); the smoke script runs only this. */
    synthesize,
    async submit(req, ctx) {
      const [actorImage] = req.inputs.filter((i) => i.role === 'actor_image' || i.role === 'image');
      if (!actorImage) throw new ProviderError("talking actor needs the actor's image", { retryable: false });
      // InfiniteTalk keeps the image's shape: crop it to the asked aspect ratio so the option applies.
      const image = await conformActorImage(req, actorImage, ctx, cfg.fal.media);
      const speech = await synthesize(req, ctx);
      ctx.heartbeat({ phase: 'speech-ready' });
      const lipsyncModel = req.route.secondaryModelIds?.lipsync;
      if (!lipsyncModel) throw new ProviderError(`${req.model} has no lipsync model in the catalog`, { retryable: false });
      // The body below is checked against InfiniteTalk's input type: another lipsync endpoint needs its own.
      if (lipsyncModel !== 'fal-ai/infinitalk')
        throw new ProviderError(`${req.model}: the lipsync request is built for fal-ai/infinitalk, not ${lipsyncModel}`, { retryable: false });
      const numFrames = lipsyncFrames(speech.seconds);
      if (numFrames === undefined) {
        throw new ProviderError(
          `the speech lasts ${speech.seconds.toFixed(1)} s, longer than the ${((infinitalkMaxFrames - 1) / infinitalkFps).toFixed(1)} s one lipsync video can carry; use a shorter script`,
          { retryable: false },
        );
      }
      const input = {
        image_url: await ctx.inputUrl(image.key),
        audio_url: await ctx.inputUrl(speech.key),
        prompt: req.prompt ?? 'A person talking naturally to the camera.',
        resolution: oneOf('fal', 'resolution', infinitalkResolutions, req.resolution ?? req.route.defaultResolution ?? '720p'),
        num_frames: numFrames,
      } satisfies FalInput<'fal-ai/infinitalk'>;
      const lipsync = await fal.submit(lipsyncModel, input, req.jobId, ctx);
      const ref: TalkingActorRef = { provider: 'elevenlabs', jobId: req.jobId, speechKey: speech.key, speechSeconds: speech.seconds, lipsync };
      return { ...ref };
    },
    async poll(ref, ctx): Promise<PollResult> {
      return fal.poll(refOf(ref).lipsync, ctx);
    },
    async cancel(ref, ctx) {
      return fal.cancel(refOf(ref).lipsync, ctx);
    },
    // The lipsync video is a fal output.
    outputHeaders: (output) => falOutputHeaders(cfg.fal, output),
  };
}

/** A 44-byte RIFF/WAVE header for 16-bit mono PCM. */
function wavHeader(dataBytes: number, rate: number): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

export const createAdapter: AdapterModule['createAdapter'] = (c) =>
  createElevenLabsAdapter({ key: c.ELEVENLABS_API_KEY!, baseUrl: c.ELEVENLABS_BASE_URL, fal: falConfigFrom(c) });

/** The route prober's lookup of a model (./probe.ts). */
export { modelLookup } from './probe.js';
