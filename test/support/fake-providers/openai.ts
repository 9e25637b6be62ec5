// A local OpenAI Images server written from the API reference: POST /v1/images/generations with
// `Authorization: Bearer <key>` and { model, prompt, n, size, output_format } → { created, data:
// [{ b64_json }] }. Errors use `{ error: { message, type, param, code } }`; a prompt containing
// "forbidden" is refused by the safety system (400 moderation_blocked). An `Idempotency-Key` seen
// before replays the first answer.
import { FakeServer, json, tinyPng, type Answer, type RecordedRequest } from './server.js';

const sizes = ['1024x1024', '1536x1024', '1024x1536', 'auto'];
const models = ['gpt-image-1.5', 'gpt-image-1-mini', 'gpt-image-2'];

export class FakeOpenAI extends FakeServer {
  readonly key: string;
  private readonly replays = new Map<string, Answer>();
  generations = 0;

  constructor(key = 'sk-test-openai-0123456789') {
    super((method, path) => (method === 'POST' && path === '/v1/images/generations' ? 'images' : undefined), (req) => this.answer(req));
    this.key = key;
  }

  private answer(req: RecordedRequest): Answer {
    if (req.headers.authorization !== `Bearer ${this.key}`) {
      return json(401, { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
    }
    const idem = req.headers['idempotency-key'];
    if (typeof idem === 'string' && this.replays.has(idem)) return this.replays.get(idem)!;
    const b = (req.json ?? {}) as Record<string, unknown>;
    const invalid = (param: string, message: string) => json(400, { error: { message, type: 'invalid_request_error', param, code: 'invalid_value' } });
    if (typeof b.model !== 'string' || !models.includes(b.model)) return invalid('model', `Invalid model: ${String(b.model)}`);
    if (typeof b.prompt !== 'string' || !b.prompt) return invalid('prompt', 'prompt is required');
    if (b.size !== undefined && !sizes.includes(b.size as string)) return invalid('size', `Invalid size '${String(b.size)}'. Supported: ${sizes.join(', ')}`);
    const n = b.n ?? 1;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 10) return invalid('n', 'n must be between 1 and 10');
    if (b.output_format !== undefined && !['png', 'jpeg', 'webp'].includes(b.output_format as string)) return invalid('output_format', 'Invalid output_format');
    if (/forbidden/i.test(b.prompt)) {
      return json(400, { error: { message: 'Your request was rejected as a result of our safety system.', type: 'image_generation_user_error', param: null, code: 'moderation_blocked' } });
    }
    this.generations++;
    const answer = json(200, { created: Math.floor(Date.now() / 1000), data: Array.from({ length: n }, () => ({ b64_json: tinyPng.toString('base64') })), usage: { total_tokens: 100 } });
    if (typeof idem === 'string') this.replays.set(idem, answer);
    return answer;
  }
}

export async function startFakeOpenAI(key?: string): Promise<FakeOpenAI> {
  return new FakeOpenAI(key).start();
}
