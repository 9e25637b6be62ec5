// A local OpenAI Images server speaking the protocol of providers/openai/contract.ts (openai-node's
// ImageGenerateParams and the API reference): POST /v1/images/generations with `Authorization: Bearer
// <key>` and a body validated against the same strict schema the adapter is type-checked with →
// { created, background, data: [{ b64_json }], output_format, quality, size, usage } (openai-node's
// ImagesResponse: the answer echoes what was generated, `auto` resolved: imagesEcho). Errors use `{ error: { message, type, param, code } }`: a prompt
// containing "forbidden" is refused by the safety system (400 moderation_blocked); `outOfQuota` makes
// every call answer 429 insufficient_quota. Every accepted call is a new, paid generation: like the
// real API, nothing is replayed by an idempotency key.
import { gptImage2SizeProblem, openaiImageGenerateParams } from '../../../providers/openai/contract.js';
import { FakeServer, json, tinyPng, type Answer, type RecordedRequest } from './server.js';
import { documentedMedia, shapedMedia, sizeOf } from './media.js';

const models = [
  'gpt-image-1.5',
  'gpt-image-1-mini',
  'gpt-image-2',
  'gpt-image-2.5-sunburst',
  'gpt-image-2.5-flare',
  'gpt-image-2.6-sunburst',
  'gpt-image-2.6-flare',
];
/** Sizes the GPT image models accept (the SDK type also lists DALL·E sizes); gpt-image-2 takes WIDTHxHEIGHT within its limits too. */
const gptImageSizes = ['auto', '1024x1024', '1536x1024', '1024x1536'];
const arbitrarySizes = (model: string) => /^gpt-image-2(\.5-(sunburst|flare))?$/.test(model);

/**
 * The fields of an ImagesResponse that echo the generation (openai-node resources/images.d.ts, read
 * 2026-12-02): `size` WIDTHxHEIGHT as generated, `output_format` as asked (png by default), `quality`
 * one of low | medium | high (the SDK adds xhigh | max), `background` transparent | opaque. OpenAI does
 * not document what `auto` resolves to; the fake answers 1024x1024, medium and opaque for it.
 */
export function imagesEcho(b: {
  size?: string | null | undefined;
  quality?: string | null | undefined;
  output_format?: string | null | undefined;
  background?: string | null | undefined;
}) {
  return {
    size: b.size && b.size !== 'auto' ? b.size : '1024x1024',
    output_format: b.output_format ?? 'png',
    quality: b.quality && b.quality !== 'auto' ? b.quality : 'medium',
    background: b.background && b.background !== 'auto' ? b.background : 'opaque',
  };
}

export class FakeOpenAI extends FakeServer {
  readonly key: string;
  generations = 0;
  outOfQuota = false;
  /** The `size` of the last accepted generation. */
  lastSize: string | undefined;
  /** How long an accepted generation takes before the answer (the real API answers when the image is made). */
  generationMs = 0;
  /** `shutdown_date` (YYYY-MM-DD) per model, as GET /v1/models/{id} answers it: OpenAI's announced shutdowns. */
  readonly shutdownDates = new Map<string, string>();
  /** Models past their shutdown: a generation answers 404 model_not_found, as the API does for a model it no longer serves. */
  readonly shutDown = new Set<string>();

  constructor(key = 'sk-test-openai-0123456789') {
    super(
      (method, path) => (method === 'POST' && path === '/v1/images/generations' ? 'images' : undefined),
      (req) => this.answer(req),
    );
    this.key = key;
  }

  private async answer(req: RecordedRequest): Promise<Answer> {
    if (req.headers.authorization !== `Bearer ${this.key}`) {
      return json(401, { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
    }
    const invalid = (param: string, message: string) => json(400, { error: { message, type: 'invalid_request_error', param, code: 'invalid_value' } });
    const parsed = openaiImageGenerateParams.safeParse(req.json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      return invalid(issue.path.join('.') || 'body', issue.message);
    }
    const b = parsed.data;
    if (typeof b.model !== 'string' || !models.includes(b.model)) return invalid('model', `Invalid model: ${String(b.model)}`);
    if (this.shutDown.has(b.model))
      return json(404, {
        error: { message: `The model '${b.model}' has been deprecated.`, type: 'invalid_request_error', param: 'model', code: 'model_not_found' },
      });
    if (b.size != null && !gptImageSizes.includes(b.size)) {
      const problem = arbitrarySizes(b.model) ? gptImage2SizeProblem(b.size) : `Supported: ${gptImageSizes.join(', ')}`;
      if (problem) return invalid('size', `Invalid size '${b.size}': ${problem}`);
    }
    if (b.response_format != null) return invalid('response_format', 'Unknown parameter: response_format is not supported for GPT image models.');
    if (this.outOfQuota) {
      return json(429, {
        error: {
          message: 'You exceeded your current quota, please check your plan and billing details.',
          type: 'insufficient_quota',
          param: null,
          code: 'insufficient_quota',
        },
      });
    }
    if (/forbidden/i.test(b.prompt)) {
      return json(400, {
        error: {
          message: 'Your request was rejected as a result of our safety system.',
          type: 'image_generation_user_error',
          param: null,
          code: 'moderation_blocked',
        },
      });
    }
    this.generations++;
    this.lastSize = b.size ?? undefined;
    const n = b.n ?? 1;
    const echo = imagesEcho(b);
    // The generated size in the asked format with documented media on.
    const size = sizeOf(echo.size);
    const image = documentedMedia.on && size ? await shapedMedia({ format: echo.output_format === 'png' ? 'png' : 'jpeg', ...size }) : tinyPng;
    return {
      ...json(200, {
        created: Math.floor(Date.now() / 1000),
        background: echo.background,
        data: Array.from({ length: n }, () => ({ b64_json: image.toString('base64') })),
        output_format: echo.output_format,
        quality: echo.quality,
        size: echo.size,
        usage: { input_tokens: 50, input_tokens_details: { image_tokens: 0, text_tokens: 50 }, output_tokens: 50, total_tokens: 100 },
      }),
      delayMs: this.generationMs,
    };
  }

  // "Retrieve model" (openai-node Models.retrieve: GET /v1/models/{model}) → { id, object: 'model',
  // created, owned_by, shutdown_date }; a model the key cannot use → 404 model_not_found.
  protected override modelsOp(method: string, path: string): 'models' | undefined {
    return method === 'GET' && /^\/v1\/models\/[^/]+$/.test(path) ? 'models' : undefined;
  }

  protected override modelsAnswer(req: RecordedRequest): Answer {
    if (req.headers.authorization !== `Bearer ${this.key}`) {
      return json(401, { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
    }
    const id = decodeURIComponent(req.path.split('/').pop()!);
    if (!models.includes(id) || this.lostModels.has(id)) {
      return json(404, { error: { message: `The model '${id}' does not exist`, type: 'invalid_request_error', param: 'model', code: 'model_not_found' } });
    }
    // shutdown_date: "the date when the model will shut down, or null if not announced" (openai-node Model).
    return json(200, { id, object: 'model', created: 1_760_000_000, owned_by: 'system', shutdown_date: this.shutdownDates.get(id) ?? null });
  }
}

export async function startFakeOpenAI(key?: string): Promise<FakeOpenAI> {
  return new FakeOpenAI(key).start();
}
