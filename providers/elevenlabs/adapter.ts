// ElevenLabs text-to-speech: the speech step of a talking actor (the catalog route's `speech`), run by the
// generation workflow on ElevenLabs' queue before the route's own lipsync request goes to fal.
//
// POST {base}/v1/text-to-speech/{voice_id}?output_format=pcm_24000 with `xi-api-key` and
// { text, model_id, voice_settings? } (providers/elevenlabs/contract.ts; voice_settings carries only the
// options the request gave, so each voice keeps its own stored tuning) → raw 16-bit mono PCM at 24 kHz.
// We wrap it in a WAV header (its length is then known exactly) and store it at jobs/<jobId>/speech.wav;
// a retried step reuses the stored speech instead of paying for it twice. ElevenLabs serves no route
// of its own: a submit here is refused.
import type { ProviderAdapter, ProviderContext, ProviderRequest, SpeechAudio, VoiceSettings } from '../../activities/providers/types.js';
import { notConfirmed, ProviderError } from '../../activities/providers/types.js';
import type { AdapterModule } from '../../activities/providers/adapter-module.js';
import { joinUrl, malformed, providerFetch, readText, type HttpCallOptions } from '../../activities/providers/http.js';
import { classify, errorOfRow } from '../../activities/providers/error-table.js';
import { elevenlabsErrors, elevenlabsFacts } from './errors.js';
import type { ElevenLabsTextToSpeechBody, ElevenLabsVoiceSettings } from './contract.js';
import { longestCallMs } from '../../activities/providers/call-timeouts.js';

interface ElevenLabsConfig {
  key: string;
  baseUrl: string;
  timeoutMs?: number;
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

export function createElevenLabsAdapter(cfg: ElevenLabsConfig): ProviderAdapter & { speak(req: ProviderRequest, ctx: ProviderContext): Promise<SpeechAudio> } {
  // A long script can take minutes to speak.
  const timeoutMs = cfg.timeoutMs ?? longestCallMs.elevenlabs;
  const opts = (what: string, ctx: ProviderContext): HttpCallOptions => ({
    provider: 'ElevenLabs',
    what,
    timeoutMs,
    signal: ctx.signal,
    secrets: [cfg.key],
  });

  async function speak(req: ProviderRequest, ctx: ProviderContext): Promise<SpeechAudio> {
    const key = `${ctx.storage.jobMediaPrefix(req.jobId)}/speech.wav`;
    const existing = await ctx.storage.stat(key);
    if (existing && existing.size > 44) return { key, seconds: (existing.size - 44) / (sampleRate * 2) };

    const voiceId = req.voice?.providerVoiceId;
    if (!voiceId) throw new ProviderError(`voice ${req.voice?.id ?? '(none)'} has no ElevenLabs voice id`, { retryable: false });
    if (!req.script?.trim()) throw new ProviderError('the talking-actor script is empty', { retryable: false });

    const modelId = req.route.speech?.modelId;
    if (!modelId) throw new ProviderError(`${req.model} has no speech step in the catalog`, { retryable: false });
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
          model_id: modelId,
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

  const noRoute = (): never => {
    throw new ProviderError('ElevenLabs serves speech steps only, never a route of its own', { retryable: false });
  };
  return {
    name: 'elevenlabs',
    speak,
    submit: async () => noRoute(),
    poll: async () => noRoute(),
    // A speech call ends within its request: nothing is left to cancel.
    cancel: async () => notConfirmed,
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

export const createAdapter: AdapterModule['createAdapter'] = (c) => createElevenLabsAdapter({ key: c.ELEVENLABS_API_KEY!, baseUrl: c.ELEVENLABS_BASE_URL });

/** The route prober's lookup of a model (./probe.ts). */
export { modelLookup } from './probe.js';
