// A local ElevenLabs text-to-speech server speaking the protocol of providers/elevenlabs/contract.ts: POST
// /v1/text-to-speech/{voice_id}?output_format=pcm_24000 with `xi-api-key` and a body validated against
// the same strict schema the adapter's body is type-checked with → raw 16-bit PCM whose length follows
// the text and the speed. Errors use `{ detail: { status, message } }`; validation errors 422
// `{ detail: [{ loc, msg, type }] }`.
import { elevenLabsTextToSpeechBody } from '../../../providers/elevenlabs/contract.js';
import { FakeServer, json, type Answer, type RecordedRequest } from './server.js';

export class FakeElevenLabs extends FakeServer {
  readonly key: string;
  readonly voices = new Set(['21m00Tcm4TlvDq8ikWAM', 'pNInz6obpgDQGcFmaJgB']);
  /** Seconds of speech per character at speed 1. */
  secondsPerChar = 0.06;
  /** How long each speech answer takes (a long synthesis); the request is recorded when it arrives. */
  synthesisDelayMs = 0;

  constructor(key = 'el-test-key-0123456789') {
    super(
      (method, path) => (method === 'POST' && /^\/v1\/text-to-speech\/[^/]+$/.test(path) ? 'tts' : undefined),
      (req) => this.answer(req),
    );
    this.key = key;
  }

  /** The variables that send ElevenLabs' speech here (testConfig overrides, worker process variables). */
  get env(): Record<string, string> {
    return { ELEVENLABS_API_KEY: this.key, ELEVENLABS_BASE_URL: this.url };
  }

  private answer(req: RecordedRequest): Answer {
    const err = (status: number, code: string, message: string) => json(status, { detail: { status: code, message } });
    if (req.headers['xi-api-key'] !== this.key) return err(401, 'invalid_api_key', 'Invalid API key');
    const voiceId = decodeURIComponent(req.path.split('/').pop()!);
    if (!this.voices.has(voiceId)) return err(404, 'voice_not_found', `A voice with the voice_id ${voiceId} was not found.`);
    const format = req.query.get('output_format') ?? 'mp3_44100_128';
    const rate = /^pcm_(\d+)$/.exec(format)?.[1];
    if (!rate) return err(422, 'invalid_output_format', `This fake only speaks PCM; got ${format}`);
    const parsed = elevenLabsTextToSpeechBody.safeParse(req.json);
    if (!parsed.success) {
      return json(422, { detail: parsed.error.issues.map((i) => ({ loc: ['body', ...i.path.map(String)], msg: i.message, type: i.code })) });
    }
    const b = parsed.data;
    if (!b.text.trim()) return err(422, 'invalid_text', 'text is required');
    const vs = b.voice_settings ?? {};
    const speed = typeof vs.speed === 'number' ? vs.speed : 1;
    const seconds = (b.text.length * this.secondsPerChar) / speed;
    const samples = Math.max(2400, Math.round(seconds * Number(rate)));
    const pcm = Buffer.alloc(samples * 2);
    for (let i = 0; i < samples; i++) pcm.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 220 * i) / Number(rate))), i * 2);
    return { status: 200, headers: { 'content-type': 'audio/pcm' }, body: pcm, delayMs: this.synthesisDelayMs };
  }

  /** The model ids ElevenLabs lists here. */
  readonly models = new Set(['eleven_multilingual_v2', 'eleven_flash_v2_5', 'eleven_v3']);

  // "List models" (elevenlabs.io/docs/api-reference/models/list): GET /v1/models with `xi-api-key` →
  // an array of model objects with the fields of the recorded example (test/fixtures/provider-examples/elevenlabs.json).
  protected override modelsOp(method: string, path: string): 'models' | undefined {
    return method === 'GET' && path === '/v1/models' ? 'models' : undefined;
  }

  protected override modelsAnswer(req: RecordedRequest): Answer {
    if (req.headers['xi-api-key'] !== this.key) return json(401, { detail: { status: 'invalid_api_key', message: 'Invalid API key' } });
    return json(
      200,
      [...this.models]
        .filter((id) => !this.lostModels.has(id))
        .map((model_id) => ({
          model_id,
          name: model_id,
          can_be_finetuned: false,
          can_do_text_to_speech: true,
          can_do_voice_conversion: false,
          can_use_style: true,
          can_use_speaker_boost: true,
          serves_pro_voices: true,
          token_cost_factor: 1.0,
          description: `${model_id} text-to-speech model.`,
          requires_alpha_access: false,
          max_characters_request_free_user: 2500,
          max_characters_request_subscribed_user: 10000,
          maximum_text_length_per_request: 5000,
          languages: [{ language_id: 'en', name: 'English' }],
          model_rates: { character_cost_multiplier: 1.0 },
          concurrency_group: 'default',
        })),
    );
  }
}

export async function startFakeElevenLabs(key?: string): Promise<FakeElevenLabs> {
  return new FakeElevenLabs(key).start();
}
