// A local xAI video server written from docs.x.ai (Video Generation, deferred requests): POST
// /v1/videos/generations with `Authorization: Bearer <key>` and { model, prompt, duration, aspect_ratio,
// resolution, image? } → { request_id }; GET /v1/videos/{request_id} → { status: "pending" } until
// done, then { status: "done", video: { url, duration, respect_moderation }, model }.
import { randomUUID } from 'node:crypto';
import { FakeServer, json, tinyPng, type Answer, type RecordedRequest } from './server.js';

export type XaiOutcome = 'success' | 'moderated' | 'failed' | 'expired';

export class FakeXai extends FakeServer {
  readonly key: string;
  /** Status calls that answer "pending" before a request is done. */
  pendingPolls = 2;
  readonly states = new Map<string, { polls: number; outcome: XaiOutcome; duration: number }>();
  private readonly outcomes: XaiOutcome[] = [];

  constructor(key = 'xai-test-key-0123456789') {
    super(
      (method, path) =>
        method === 'POST' && path === '/v1/videos/generations' ? 'submit' : method === 'GET' && /^\/v1\/videos\/[^/]+$/.test(path) ? 'status' : method === 'GET' && path.startsWith('/files/') ? 'file' : undefined,
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
      const b = (req.json ?? {}) as Record<string, unknown>;
      const bad = (error: string) => json(400, { code: 'invalid_argument', error });
      if (b.model !== 'grok-imagine-video') return bad(`The model ${String(b.model)} does not exist`);
      if (typeof b.prompt !== 'string' || !b.prompt) return bad('prompt is required');
      const d = b.duration ?? 6;
      if (typeof d !== 'number' || !Number.isInteger(d) || d < 1 || d > 15) return bad('duration must be an integer from 1 to 15');
      if (b.aspect_ratio !== undefined && !['16:9', '9:16', '1:1', '4:3', '3:4', '3:2', '2:3'].includes(b.aspect_ratio as string)) return bad('invalid aspect_ratio');
      if (b.resolution !== undefined && !['480p', '720p'].includes(b.resolution as string)) return bad('invalid resolution');
      const id = randomUUID();
      this.states.set(id, { polls: 0, outcome: this.outcomes.shift() ?? 'success', duration: d });
      return json(200, { request_id: id });
    }
    const id = req.path.split('/').pop()!;
    const st = this.states.get(id);
    if (!st) return json(404, { code: 'not_found', error: 'Request not found' });
    if (st.polls++ < this.pendingPolls) return json(200, { status: 'pending' });
    switch (st.outcome) {
      case 'expired':
        return json(200, { status: 'expired' });
      case 'failed':
        return json(200, { status: 'failed', error: 'internal generation error' });
      default:
        return json(200, { status: 'done', model: 'grok-imagine-video', video: { url: `${this.url}/files/${id}.mp4`, duration: st.duration, respect_moderation: st.outcome !== 'moderated' } });
    }
  }
}

export async function startFakeXai(key?: string): Promise<FakeXai> {
  return new FakeXai(key).start();
}
