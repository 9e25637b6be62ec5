// A local fal.ai queue server written from fal's Queue API documentation: POST /{endpoint_id} →
// { request_id, status_url, response_url, cancel_url }; GET …/requests/{id}/status → IN_QUEUE
// (queue_position) | IN_PROGRESS | COMPLETED; GET …/requests/{id} → the model's result or its error
// (422 with `detail: [{ loc, msg, type }]`); PUT …/requests/{id}/cancel → CANCELLATION_REQUESTED or
// 400 ALREADY_COMPLETED. Inputs are checked against each endpoint's documented schema.
import { randomUUID } from 'node:crypto';
import { FakeServer, json, tinyPng, type Answer, type RecordedRequest } from './server.js';

type Check = { required: string[]; enums?: Record<string, readonly unknown[]>; ranges?: Record<string, [number, number]>; output: 'images' | 'video' };

const str = (lo: number, hi: number) => Array.from({ length: hi - lo + 1 }, (_, i) => String(lo + i));
const veo = { aspect_ratio: ['16:9', '9:16'], duration: ['4s', '6s', '8s'], resolution: ['720p', '1080p', '4k'] };
const veoI2v = { ...veo, aspect_ratio: ['auto', '16:9', '9:16'] };
const nanoRatios = ['auto', '21:9', '16:9', '3:2', '4:3', '5:4', '1:1', '4:5', '3:4', '2:3', '9:16'];
const seedreamSizes = ['square_hd', 'square', 'portrait_4_3', 'portrait_16_9', 'landscape_4_3', 'landscape_16_9', 'auto_2K', 'auto_4K'];
const seedance = { aspect_ratio: ['21:9', '16:9', '4:3', '1:1', '3:4', '9:16', 'auto'], resolution: ['480p', '720p', '1080p'], duration: str(4, 12) };
const grok = { resolution: ['480p', '720p'], aspect_ratio: ['16:9', '9:16', '1:1', '4:3', '3:2', '2:3', '3:4'] };

/** Endpoint schemas, from each model's fal page (required fields, enums, numeric ranges). */
export const falEndpoints: Record<string, Check> = {
  'fal-ai/nano-banana-2': { required: ['prompt'], enums: { aspect_ratio: nanoRatios, output_format: ['jpeg', 'png', 'webp'] }, ranges: { num_images: [1, 4] }, output: 'images' },
  'fal-ai/nano-banana-2/edit': { required: ['prompt', 'image_urls'], enums: { aspect_ratio: nanoRatios }, ranges: { num_images: [1, 4] }, output: 'images' },
  'fal-ai/bytedance/seedream/v4.5/text-to-image': { required: ['prompt'], enums: { image_size: seedreamSizes }, ranges: { num_images: [1, 6] }, output: 'images' },
  'fal-ai/bytedance/seedream/v4.5/edit': { required: ['prompt', 'image_urls'], enums: { image_size: seedreamSizes }, ranges: { num_images: [1, 6] }, output: 'images' },
  'fal-ai/kling-video/v3/pro/text-to-video': { required: ['prompt'], enums: { duration: str(3, 15), aspect_ratio: ['16:9', '9:16', '1:1'] }, output: 'video' },
  'fal-ai/kling-video/v3/pro/image-to-video': { required: ['start_image_url'], enums: { duration: str(3, 15) }, output: 'video' },
  'fal-ai/kling-video/v2.6/pro/text-to-video': { required: ['prompt'], enums: { duration: ['5', '10'], aspect_ratio: ['16:9', '9:16', '1:1'] }, output: 'video' },
  'fal-ai/kling-video/v2.6/pro/image-to-video': { required: ['prompt', 'start_image_url'], enums: { duration: ['5', '10'] }, output: 'video' },
  'fal-ai/veo3.1': { required: ['prompt'], enums: veo, output: 'video' },
  'fal-ai/veo3.1/image-to-video': { required: ['prompt', 'image_url'], enums: veoI2v, output: 'video' },
  'fal-ai/veo3.1/first-last-frame-to-video': { required: ['prompt', 'first_frame_url', 'last_frame_url'], enums: veoI2v, output: 'video' },
  'fal-ai/veo3.1/reference-to-video': { required: ['prompt', 'image_urls'], enums: veo, output: 'video' },
  'fal-ai/veo3.1/fast': { required: ['prompt'], enums: veo, output: 'video' },
  'fal-ai/veo3.1/fast/image-to-video': { required: ['prompt', 'image_url'], enums: veoI2v, output: 'video' },
  'fal-ai/veo3.1/fast/first-last-frame-to-video': { required: ['prompt', 'first_frame_url', 'last_frame_url'], enums: veoI2v, output: 'video' },
  'fal-ai/bytedance/seedance/v1.5/pro/text-to-video': { required: ['prompt'], enums: seedance, output: 'video' },
  'fal-ai/bytedance/seedance/v1.5/pro/image-to-video': { required: ['prompt', 'image_url'], enums: seedance, output: 'video' },
  'xai/grok-imagine-video/text-to-video': { required: ['prompt'], enums: grok, ranges: { duration: [1, 15] }, output: 'video' },
  'xai/grok-imagine-video/image-to-video': { required: ['prompt', 'image_url'], enums: { resolution: grok.resolution }, ranges: { duration: [1, 15] }, output: 'video' },
  'fal-ai/wan/v2.2-14b/animate/replace': { required: ['video_url', 'image_url'], enums: { resolution: ['480p', '580p', '720p'] }, output: 'video' },
  'fal-ai/infinitalk': { required: ['image_url', 'audio_url', 'prompt'], enums: { resolution: ['480p', '720p'] }, ranges: { num_frames: [41, 721] }, output: 'video' },
};

export type FalOutcome = 'success' | 'content_policy' | 'no_files';

interface FalRequestState {
  id: string;
  endpointId: string;
  input: Record<string, unknown>;
  step: number;
  outcome: FalOutcome;
  canceled: boolean;
}

export class FakeFal extends FakeServer {
  readonly key: string;
  readonly states = new Map<string, FalRequestState>();
  /** The status sequence each request walks through, one step per status call. */
  flow: readonly ('IN_QUEUE' | 'IN_PROGRESS' | 'COMPLETED')[] = ['IN_QUEUE', 'IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
  /** Outcome of the next submitted requests (then 'success'). */
  private readonly outcomes: FalOutcome[] = [];

  constructor(key = 'fal-test-key-0123456789') {
    super(classifyFal, (req) => this.answer(req));
    this.key = key;
  }

  nextOutcome(outcome: FalOutcome): this {
    this.outcomes.push(outcome);
    return this;
  }

  private answer(req: RecordedRequest): Answer {
    if (req.op === 'file') return { status: 200, headers: { 'content-type': req.path.endsWith('.png') ? 'image/png' : 'video/mp4' }, body: tinyPng };
    if (req.headers.authorization !== `Key ${this.key}`) return json(401, { detail: 'No user found for Key ID and Secret' });
    const parts = req.path.split('/').filter(Boolean);
    if (req.op === 'submit') return this.submit(parts.join('/'), req.json);
    const id = parts[3]!;
    const st = this.states.get(id);
    if (!st || st.endpointId.split('/').slice(0, 2).join('/') !== parts.slice(0, 2).join('/')) return json(404, { detail: 'Request not found' });
    const base = `${this.url}/${parts[0]}/${parts[1]}/requests/${id}`;
    if (req.op === 'status') {
      const status = st.canceled ? 'COMPLETED' : this.flow[Math.min(st.step, this.flow.length - 1)]!;
      st.step++;
      const body: Record<string, unknown> = { status, request_id: id, response_url: base, status_url: `${base}/status`, cancel_url: `${base}/cancel` };
      if (status === 'IN_QUEUE') body.queue_position = Math.max(0, this.flow.filter((s) => s === 'IN_QUEUE').length - st.step);
      if (req.query.get('logs') === '1') body.logs = status === 'IN_PROGRESS' ? [{ message: 'Generating: 40%', level: 'INFO', timestamp: new Date().toISOString() }] : [];
      return json(200, body);
    }
    if (req.op === 'cancel') {
      if (st.canceled) return json(202, { status: 'CANCELLATION_REQUESTED' });
      if (st.step >= this.flow.length) return json(400, { status: 'ALREADY_COMPLETED' });
      st.canceled = true;
      return json(202, { status: 'CANCELLATION_REQUESTED' });
    }
    // result
    if (st.canceled) return json(400, { detail: 'Request was cancelled by the user' });
    if (st.step < this.flow.length) return json(400, { detail: 'Request is still in progress' });
    if (st.outcome === 'content_policy') {
      return json(422, { detail: [{ loc: ['body', 'prompt'], msg: 'The content could not be processed because it contained material flagged by a content checker.', type: 'content_policy_violation' }] });
    }
    if (st.outcome === 'no_files') return json(200, { seed: 42 });
    const check = falEndpoints[st.endpointId]!;
    if (check.output === 'images') {
      const n = Number(st.input.num_images ?? 1);
      return json(200, { images: Array.from({ length: n }, (_, i) => ({ url: `${this.url}/files/${id}-${i + 1}.png`, content_type: 'image/png', file_size: tinyPng.length })), seed: 42 });
    }
    return json(200, { video: { url: `${this.url}/files/${id}.mp4`, content_type: 'video/mp4', file_size: tinyPng.length } });
  }

  private submit(endpointId: string, input: unknown): Answer {
    const check = falEndpoints[endpointId];
    if (!check) return json(404, { detail: `Application '${endpointId}' not found` });
    if (!input || typeof input !== 'object') return json(422, { detail: [{ loc: ['body'], msg: 'Input should be a valid dictionary', type: 'dict_type' }] });
    const body = input as Record<string, unknown>;
    const errors: { loc: string[]; msg: string; type: string }[] = [];
    for (const f of check.required) if (body[f] === undefined || body[f] === null || body[f] === '') errors.push({ loc: ['body', f], msg: 'Field required', type: 'missing' });
    for (const [f, allowed] of Object.entries(check.enums ?? {})) {
      if (body[f] !== undefined && !allowed.includes(body[f])) errors.push({ loc: ['body', f], msg: `Input should be ${allowed.map((a) => `'${String(a)}'`).join(', ')}`, type: 'literal_error' });
    }
    for (const [f, [lo, hi]] of Object.entries(check.ranges ?? {})) {
      const v = body[f];
      if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi)) errors.push({ loc: ['body', f], msg: `Input should be an integer from ${lo} to ${hi}`, type: 'value_error' });
    }
    for (const [f, v] of Object.entries(body)) {
      if (/_url$/.test(f) && (typeof v !== 'string' || !/^https?:\/\//.test(v))) errors.push({ loc: ['body', f], msg: 'Input should be a valid URL', type: 'url_parsing' });
      if (/_urls$/.test(f) && (!Array.isArray(v) || !v.every((u) => typeof u === 'string' && /^https?:\/\//.test(u)))) errors.push({ loc: ['body', f], msg: 'Input should be a list of URLs', type: 'url_parsing' });
    }
    if (errors.length) return json(422, { detail: errors });
    const id = randomUUID();
    this.states.set(id, { id, endpointId, input: body, step: 0, outcome: this.outcomes.shift() ?? 'success', canceled: false });
    const app = endpointId.split('/').slice(0, 2).join('/');
    const base = `${this.url}/${app}/requests/${id}`;
    return json(200, { status: 'IN_QUEUE', request_id: id, response_url: base, status_url: `${base}/status`, cancel_url: `${base}/cancel`, queue_position: 0 });
  }
}

function classifyFal(method: string, path: string): string | undefined {
  if (method === 'GET' && path.startsWith('/files/')) return 'file';
  const parts = path.split('/').filter(Boolean);
  if (parts.length >= 4 && parts[2] === 'requests') {
    if (parts.length === 5 && parts[4] === 'status' && method === 'GET') return 'status';
    if (parts.length === 5 && parts[4] === 'cancel' && method === 'PUT') return 'cancel';
    if (parts.length === 4 && method === 'GET') return 'result';
    return undefined;
  }
  if (method === 'POST' && parts.length >= 2) return 'submit';
  return undefined;
}

export async function startFakeFal(key?: string): Promise<FakeFal> {
  return new FakeFal(key).start();
}
