// A local fal.ai queue server speaking fal's Queue API: POST /{endpoint_id} with a body validated
// against fal's published input schema of that endpoint (fal-inputs.schema.json: derived from fal's
// released @fal-ai/client types plus the limits fal's schemas state, each with its source — not from
// this service's own contracts) → 422 `detail: [{ loc, msg, type }]` when it does not match, else
// { request_id, status_url, response_url, cancel_url }; GET …/requests/{id}/status → 202 IN_QUEUE
// (queue_position) | 202 IN_PROGRESS | 200 COMPLETED (with `error` / `error_type` when the run failed);
// GET …/requests/{id} → the result, the run's 4xx error, or a 5xx; PUT …/requests/{id}/cancel → as fal's
// "Cancel a request" documents: a queued request is removed from the queue (202 CANCELLATION_REQUESTED,
// never run), a request in progress only has a cancellation signal sent to its runner (202
// CANCELLATION_REQUESTED too) and, the app here not stopping, runs on to its result, a completed one
// answers 400 ALREADY_COMPLETED. Output files are served under /files/ (or from
// `filesBaseUrl`, a CDN origin).
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { falEndpoints, isFalEndpointId, type FalEndpointId } from '../../../providers/fal/contract.js';
import { FakeServer, json, tinyPng, type Answer, type RecordedRequest } from './server.js';
import { documentedFrame, followingFrame, noteFile } from './media.js';

export type FalOutcome = 'success' | 'content_policy' | 'no_files' | 'completed_with_error' | 'result_5xx';

interface FalRequestState {
  id: string;
  endpointId: string;
  input: Record<string, unknown>;
  step: number;
  outcome: FalOutcome;
  canceled: boolean;
  /** Cancels asked of it (a running request's are only signalled and it runs on). */
  cancelsAsked: number;
  /** Its run ended (completed, failed or canceled): it no longer holds capacity here. */
  ended: boolean;
}

export class FakeFal extends FakeServer {
  readonly key: string;
  readonly states = new Map<string, FalRequestState>();
  /** The status sequence each request walks through, one step per status call. */
  flow: readonly ('IN_QUEUE' | 'IN_PROGRESS' | 'COMPLETED')[] = ['IN_QUEUE', 'IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
  /** Where output files are served from (a CDN origin; defaults to this server). */
  filesBaseUrl: string | undefined;
  /** Endpoints the model search lists with status deprecated. */
  readonly deprecatedModels = new Set<string>();
  /** Requests submitted whose run has not ended, and the most there ever were at once. */
  inFlight = 0;
  maxInFlight = 0;
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
      if (status === 'COMPLETED') this.end(st);
      const body: Record<string, unknown> = { status, request_id: id, response_url: base, status_url: `${base}/status`, cancel_url: `${base}/cancel` };
      if (status === 'IN_QUEUE') body.queue_position = Math.max(0, this.flow.filter((s) => s === 'IN_QUEUE').length - st.step);
      if (req.query.get('logs') === '1')
        body.logs = status === 'IN_PROGRESS' ? [{ message: 'Generating: 40%', level: 'INFO', timestamp: new Date().toISOString() }] : [];
      if (status === 'COMPLETED' && st.outcome === 'completed_with_error') {
        // fal's Request Error Types: the runner failed while running the request (an infrastructure failure).
        body.error = 'Internal error while running the model';
        body.error_type = 'runner_server_error';
      }
      // fal answers 202 while a request is queued or running, 200 once it is completed.
      return json(status === 'COMPLETED' ? 200 : 202, body);
    }
    if (req.op === 'cancel') {
      if (st.canceled) return json(202, { status: 'CANCELLATION_REQUESTED' });
      if (st.step >= this.flow.length) return json(400, { status: 'ALREADY_COMPLETED' });
      // The state the request is in: the one its last status call reported (queued before any).
      const now = st.step === 0 ? this.flow[0]! : this.flow[Math.min(st.step - 1, this.flow.length - 1)]!;
      st.cancelsAsked++;
      if (now !== 'IN_QUEUE') return json(202, { status: 'CANCELLATION_REQUESTED' });
      st.canceled = true;
      this.end(st);
      return json(202, { status: 'CANCELLATION_REQUESTED' });
    }
    // result
    if (st.canceled) return json(400, { detail: 'Request was cancelled by the user' });
    if (st.step < this.flow.length) return json(400, { detail: 'Request is still in progress' });
    if (st.outcome === 'content_policy') {
      return json(422, {
        detail: [
          {
            loc: ['body', 'prompt'],
            msg: 'The content could not be processed because it contained material flagged by a content checker.',
            type: 'content_policy_violation',
          },
        ],
      });
    }
    if (st.outcome === 'result_5xx') return json(500, { detail: 'CUDA out of memory while decoding the video' });
    if (st.outcome === 'completed_with_error') return json(500, { detail: 'Internal error while running the model' });
    if (st.outcome === 'no_files') return json(200, { seed: 42 });
    const files = this.filesBaseUrl ?? this.url;
    if (isFalEndpointId(st.endpointId) && falEndpoints[st.endpointId].output === 'images') {
      const n = Number(st.input.num_images ?? 1);
      return json(200, {
        images: Array.from({ length: n }, (_, i) => ({ url: `${files}/files/${id}-${i + 1}.png`, content_type: 'image/png', file_size: tinyPng.length })),
        seed: 42,
      });
    }
    return json(200, { video: { url: `${files}/files/${id}.mp4`, content_type: 'video/mp4', file_size: tinyPng.length } });
  }

  private end(st: FalRequestState): void {
    if (st.ended) return;
    st.ended = true;
    this.inFlight--;
  }

  private submit(endpointId: string, input: unknown): Answer {
    if (!isFalEndpointId(endpointId)) return json(404, { detail: `Application '${endpointId}' not found` });
    const validate = falInputValidator(endpointId);
    if (!validate(input)) {
      return json(422, { detail: (validate.errors ?? []).map(pydanticError) });
    }
    const id = randomUUID();
    this.states.set(id, {
      id,
      endpointId,
      input: input as Record<string, unknown>,
      step: 0,
      outcome: this.outcomes.shift() ?? 'success',
      canceled: false,
      cancelsAsked: 0,
      ended: false,
    });
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    noteFalFiles(id, endpointId, input as Record<string, unknown>);
    const app = endpointId.split('/').slice(0, 2).join('/');
    const base = `${this.url}/${app}/requests/${id}`;
    return json(200, { status: 'IN_QUEUE', request_id: id, response_url: base, status_url: `${base}/status`, cancel_url: `${base}/cancel`, queue_position: 0 });
  }

  // fal's Platform API Model Search in find mode (fal.ai/docs/api-reference/platform-apis/openapi/v1.json):
  // GET /v1/models?endpoint_id=…[&endpoint_id=…] with `Authorization: Key …` → { models: [{ endpoint_id,
  // metadata }], has_more, next_cursor }, leaving out endpoints fal does not have (or lost here); an
  // endpoint's metadata.status is active or deprecated (the search's `status` filter takes those two).
  protected override modelsOp(method: string, path: string): 'models' | undefined {
    return method === 'GET' && path === '/v1/models' ? 'models' : undefined;
  }

  protected override modelsAnswer(req: RecordedRequest): Answer {
    if (req.headers.authorization !== `Key ${this.key}`) return json(401, { detail: 'No user found for Key ID and Secret' });
    const ids = req.query.getAll('endpoint_id').filter((id) => id in falInputSchemaDocument.endpoints && !this.lostModels.has(id));
    return json(200, {
      models: ids.map((endpoint_id) => ({
        endpoint_id,
        metadata: { display_name: endpoint_id, status: this.deprecatedModels.has(endpoint_id) ? 'deprecated' : 'active' },
      })),
      has_more: false,
      next_cursor: null,
    });
  }
}

/** A schema violation as fal's pydantic validation words it: `{ loc: ['body', field…], msg, type }`. */
function pydanticError(e: ErrorObject): { loc: string[]; msg: string; type: string } {
  const loc = ['body', ...e.instancePath.split('/').filter(Boolean)];
  const p = e.params as Record<string, unknown>;
  const [msg, type] = ((): [string, string] => {
    switch (e.keyword) {
      case 'additionalProperties':
        loc.push(String(p.additionalProperty));
        return ['Extra inputs are not permitted', 'extra_forbidden'];
      case 'required':
        loc.push(String(p.missingProperty));
        return ['Field required', 'missing'];
      case 'enum': {
        const values = (p.allowedValues as unknown[]).map((v) => `'${String(v)}'`);
        return [`Input should be ${values.length > 1 ? `${values.slice(0, -1).join(', ')} or ${values.at(-1)}` : values[0]}`, 'literal_error'];
      }
      case 'maxLength':
        return [`String should have at most ${String(p.limit)} characters`, 'string_too_long'];
      case 'minLength':
        return [`String should have at least ${String(p.limit)} characters`, 'string_too_short'];
      case 'maxItems':
        return [`List should have at most ${String(p.limit)} items after validation`, 'too_long'];
      case 'minItems':
        return [`List should have at least ${String(p.limit)} items after validation`, 'too_short'];
      case 'maximum':
        return [`Input should be less than or equal to ${String(p.limit)}`, 'less_than_equal'];
      case 'minimum':
        return [`Input should be greater than or equal to ${String(p.limit)}`, 'greater_than_equal'];
      default:
        return [e.message ?? 'Invalid input', e.keyword];
    }
  })();
  return { loc, msg, type };
}

/** fal's published input schemas (see the header); the file sits beside this source, two levels above dist/. */
const schemaFile = fileURLToPath(new URL('../../../../test/support/fake-providers/fal-inputs.schema.json', import.meta.url));
export const falInputSchemaDocument = JSON.parse(readFileSync(schemaFile, 'utf8')) as { source: string; generated: string; endpoints: Record<string, object> };
const ajv = new Ajv2020({ allErrors: true, strict: false });
const validators = new Map<string, ValidateFunction>();

/** The validator of an endpoint's published input schema. */
export function falInputValidator(endpointId: string): ValidateFunction {
  let v = validators.get(endpointId);
  if (!v) {
    const schema = falInputSchemaDocument.endpoints[endpointId];
    if (!schema) throw new Error(`fal-inputs.schema.json has no schema for ${endpointId} (npm run fal:schemas)`);
    v = ajv.compile(schema);
    validators.set(endpointId, v);
  }
  return v;
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

/**
 * The shape of the files a request's result names, as fal's pages document it: Seedream's image at its
 * image_size { width, height } (PNG); a video at its aspect_ratio and resolution (Kling: 1080p).
 */
function noteFalFiles(id: string, endpointId: FalEndpointId, input: Record<string, unknown>): void {
  if (falEndpoints[endpointId].output === 'images') {
    const size = input.image_size as { width?: number; height?: number } | undefined;
    const n = Number(input.num_images ?? 1);
    if (size?.width && size.height) for (let i = 1; i <= n; i++) noteFile(`/files/${id}-${i}.png`, { format: 'png', width: size.width, height: size.height });
    return;
  }
  // Wan Animate Replace: the output follows the motion video at the asked resolution.
  if (endpointId === 'fal-ai/wan/v2.2-14b/animate/replace') {
    noteFile(`/files/${id}.mp4`, followingFrame(input.video_url, String(input.resolution ?? '720p')));
    return;
  }
  const resolution = input.resolution ?? (endpointId.includes('kling-video') ? '1080p' : undefined);
  const frame = documentedFrame(input.aspect_ratio, resolution);
  if (frame) noteFile(`/files/${id}.mp4`, { format: 'mp4', ...frame });
}

export async function startFakeFal(key?: string): Promise<FakeFal> {
  return new FakeFal(key).start();
}
