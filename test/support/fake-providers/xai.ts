// A local xAI video server speaking the protocol of providers/xai/contract.ts (xAI's REST reference and the
// OpenAPI types of its SDK): POST /v1/videos/generations with `Authorization: Bearer <key>` and a body
// validated against the fake's own contract (./contracts/xai.ts, transcribed from xAI's SDK apart from
// the adapter's) → { request_id }; GET
// /v1/videos/{request_id} → 202 while pending (empty body by default, as the OpenAPI document says; a
// JSON `{ status: "pending", progress }` body when `pendingBody` is set), then 200 `{ status: "done",
// video }` or 200 `{ status: "failed", error: { code, message } }`.
import { randomUUID } from 'node:crypto';
import { xaiFakeVideoGenerationRequest } from './contracts/xai.js';
import { FakeServer, json, tinyPng, type Answer, type RecordedRequest } from './server.js';
import { documentedFrame, noteFile } from './media.js';

export type XaiOutcome = 'success' | 'moderated' | 'failed' | 'expired';

export class FakeXai extends FakeServer {
  readonly key: string;
  /** Status calls that answer 202 (pending) before a request is done. */
  pendingPolls = 2;
  /** Whether a pending answer carries a JSON body with progress (xAI allows both). */
  pendingBody = false;
  readonly states = new Map<string, { polls: number; outcome: XaiOutcome; duration: number }>();
  private readonly outcomes: XaiOutcome[] = [];
  /** Where output files are served from (a CDN origin; defaults to this server). */
  filesBaseUrl: string | undefined;

  constructor(key = 'xai-test-key-0123456789') {
    super(
      (method, path) =>
        method === 'POST' && path === '/v1/videos/generations'
          ? 'submit'
          : method === 'GET' && /^\/v1\/videos\/[^/]+$/.test(path)
            ? 'status'
            : method === 'GET' && path.startsWith('/files/')
              ? 'file'
              : undefined,
      (req) => this.answer(req),
    );
    this.key = key;
  }

  nextOutcome(o: XaiOutcome): this {
    this.outcomes.push(o);
    return this;
  }

  private answer(req: RecordedRequest): Answer {
    if (req.op === 'file') return { status: 200, headers: { 'content-type': 'video/mp4' }, body: tinyPng };
    if (req.headers.authorization !== `Bearer ${this.key}`) return json(401, { code: 'unauthenticated', error: 'Incorrect API key provided' });
    if (req.op === 'submit') {
      const parsed = xaiFakeVideoGenerationRequest.safeParse(req.json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        return json(400, { code: 'invalid_argument', error: `${issue.path.join('.') || 'body'}: ${issue.message}` });
      }
      const b = parsed.data;
      if (b.model !== 'grok-imagine-video') return json(404, { code: 'not_found', error: `The model ${String(b.model)} does not exist` });
      const id = randomUUID();
      this.states.set(id, { polls: 0, outcome: this.outcomes.shift() ?? 'success', duration: b.duration ?? 8 });
      const frame = documentedFrame(b.aspect_ratio, b.resolution);
      noteFile(`/files/${id}.mp4`, frame && { format: 'mp4', ...frame });
      return json(200, { request_id: id });
    }
    const id = req.path.split('/').pop()!;
    const st = this.states.get(id);
    if (!st) return json(404, { code: 'not_found', error: 'Request not found' });
    if (st.polls < this.pendingPolls) {
      st.polls++;
      return this.pendingBody ? json(202, { status: 'pending', progress: Math.round((100 * st.polls) / (this.pendingPolls + 1)) }) : { status: 202 };
    }
    switch (st.outcome) {
      case 'expired':
        return json(200, { status: 'expired' });
      case 'failed':
        return json(200, { status: 'failed', error: { code: 'internal_error', message: 'internal generation error' } });
      default:
        return json(200, {
          status: 'done',
          model: 'grok-imagine-video',
          progress: 100,
          video: { url: `${this.filesBaseUrl ?? this.url}/files/${id}.mp4`, duration: st.duration, respect_moderation: st.outcome !== 'moderated' },
        });
    }
  }

  /** The model ids xAI serves here, by family. */
  readonly models = { video: new Set(['grok-imagine-video']), image: new Set<string>() };

  // xAI's "Video Generation Models" / "Image Generation Models" (its REST API's OpenAPI document):
  // GET /v1/video-generation-models/{model_id} → { id, object: 'model', owned_by, input_modalities,
  // output_modalities, … }; an unknown model → 404.
  protected override modelsOp(method: string, path: string): 'models' | undefined {
    return method === 'GET' && /^\/v1\/(video|image)-generation-models\/[^/]+$/.test(path) ? 'models' : undefined;
  }

  protected override modelsAnswer(req: RecordedRequest): Answer {
    if (req.headers.authorization !== `Bearer ${this.key}`) return json(401, { code: 'unauthenticated', error: 'Incorrect API key provided' });
    const [, , family, raw] = req.path.split('/');
    const id = decodeURIComponent(raw!);
    const known = family === 'video-generation-models' ? this.models.video : this.models.image;
    if (!known.has(id) || this.lostModels.has(id)) return json(404, { code: 'not_found', error: 'Model not found' });
    const output = family === 'video-generation-models' ? 'video' : 'image';
    return json(200, {
      id,
      object: 'model',
      owned_by: 'xai',
      created: 1_743_724_800,
      version: '1.0.0',
      input_modalities: ['text', 'image'],
      output_modalities: [output],
      aliases: [],
    });
  }
}

export async function startFakeXai(key?: string): Promise<FakeXai> {
  return new FakeXai(key).start();
}
