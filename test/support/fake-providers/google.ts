// A local Gemini API (Veo) server speaking the protocol of providers/google/contract.ts: POST
// /v1beta/models/{model}:predictLongRunning with `x-goog-api-key` and a body validated against the
// same strict schema the adapter's body is typed with (inline images: base64 of a PNG or JPEG of the
// stated type) → an Operation { name:
// "models/{model}/operations/{id}" }; GET /v1beta/{name} → { name, done: false } while running, then
// { done: true, response: { generateVideoResponse: { generatedSamples: [{ video: { uri } }] } } } or
// { done: true, error: { code, message, status } }. Errors are Google's { error: { code, message,
// status } }. The video uri is on this server (GET /v1beta/files/{id}:download, key header required),
// or, with `filesBaseUrl` set, on that origin (a loopback HTTPS "CDN" in end-to-end tests).
import { randomUUID } from 'node:crypto';
import { googleVeoModelIds, googleVeoPredictRequest } from '../../../providers/google/contract.js';
import { FakeServer, json, tinyPng, type Answer, type RecordedRequest } from './server.js';
import { documentedFrame, noteFile } from './media.js';

export type GoogleOutcome = 'success' | 'failed' | 'filtered' | 'unavailable' | 'quota';

/** The decoded inline image is the type it claims (PNG or JPEG signature). */
function imageBytesMatch(bytes: Buffer, mimeType: string): boolean {
  if (mimeType === 'image/png') return bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  if (mimeType === 'image/jpeg') return bytes[0] === 0xff && bytes[1] === 0xd8;
  return false;
}

const googleError = (code: number, status: string, message: string): Answer => json(code, { error: { code, message, status } });

export class FakeGoogle extends FakeServer {
  readonly key: string;
  /** Status calls answering `done: false` before an operation is done. */
  runningPolls = 2;
  readonly states = new Map<string, { polls: number; outcome: GoogleOutcome; model: string }>();
  private readonly outcomes: GoogleOutcome[] = [];
  /** When set, video uris point at `${filesBaseUrl}/files/{id}.mp4` instead of this server's download. */
  filesBaseUrl: string | undefined;

  constructor(key = 'gemini-test-key-0123456789') {
    super(
      (method, path) =>
        method === 'POST' && /^\/v1beta\/models\/[^/]+:predictLongRunning$/.test(path)
          ? 'submit'
          : method === 'GET' && /^\/v1beta\/models\/[^/]+\/operations\/[^/]+$/.test(path)
            ? 'status'
            : method === 'GET' && /^\/v1beta\/files\/[^/]+:download$/.test(path)
              ? 'download'
              : method === 'GET' && path.startsWith('/files/')
                ? 'file'
                : undefined,
      (req) => this.answer(req),
    );
    this.key = key;
  }

  nextOutcome(o: GoogleOutcome): this {
    this.outcomes.push(o);
    return this;
  }

  private answer(req: RecordedRequest): Answer {
    if (req.op === 'file') return { status: 200, headers: { 'content-type': 'video/mp4' }, body: tinyPng };
    if (req.headers['x-goog-api-key'] !== this.key)
      return googleError(403, 'PERMISSION_DENIED', "Method doesn't allow unregistered callers. Please use API Key.");
    if (req.op === 'download') {
      const id = /\/files\/([^/:]+):download$/.exec(req.path)![1]!;
      if (!this.states.has(id)) return googleError(404, 'NOT_FOUND', 'File not found');
      return { status: 200, headers: { 'content-type': 'video/mp4' }, body: tinyPng };
    }
    if (req.op === 'submit') {
      const model = /^\/v1beta\/models\/([^/]+):predictLongRunning$/.exec(req.path)![1]!;
      if (!(googleVeoModelIds as readonly string[]).includes(model))
        return googleError(404, 'NOT_FOUND', `models/${model} is not found for API version v1beta`);
      const parsed = googleVeoPredictRequest.safeParse(req.json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        return googleError(400, 'INVALID_ARGUMENT', `${issue.path.join('.') || 'body'}: ${issue.message}`);
      }
      const instance = parsed.data.instances[0]!;
      const images = [instance.image, instance.lastFrame, ...(instance.referenceImages ?? []).map((r) => r.image)].filter((i) => i !== undefined);
      const unreadable = images.find((i) => !imageBytesMatch(Buffer.from(i.bytesBase64Encoded, 'base64'), i.mimeType));
      if (unreadable) return googleError(400, 'INVALID_ARGUMENT', `Unable to process input image: the bytes are not ${unreadable.mimeType}`);
      const outcome = this.outcomes.shift() ?? 'success';
      if (outcome === 'quota') return googleError(429, 'RESOURCE_EXHAUSTED', 'You exceeded your current quota, please check your plan and billing details.');
      if (outcome === 'unavailable') return googleError(503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.');
      const id = randomUUID().replace(/-/g, '');
      this.states.set(id, { polls: 0, outcome, model });
      const frame = documentedFrame(parsed.data.parameters?.aspectRatio, parsed.data.parameters?.resolution);
      noteFile(`/files/${id}.mp4`, frame && { format: 'mp4', ...frame });
      return json(200, { name: `models/${model}/operations/${id}` });
    }
    const [, , , model, , id] = req.path.split('/');
    const st = this.states.get(id!);
    const name = `models/${model}/operations/${id}`;
    if (!st) return googleError(404, 'NOT_FOUND', 'Operation not found');
    if (st.polls < this.runningPolls) {
      st.polls++;
      return json(200, { name, done: false });
    }
    switch (st.outcome) {
      case 'failed':
        return json(200, { name, done: true, error: { code: 3, message: 'The prompt could not be processed.', status: 'INVALID_ARGUMENT' } });
      case 'filtered':
        return json(200, {
          name,
          done: true,
          response: {
            '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse',
            generateVideoResponse: { raiMediaFilteredCount: 1, raiMediaFilteredReasons: ['The video was blocked by safety filters.'] },
          },
        });
      default:
        return json(200, {
          name,
          done: true,
          response: {
            '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse',
            generateVideoResponse: {
              generatedSamples: [
                { video: { uri: this.filesBaseUrl ? `${this.filesBaseUrl}/files/${id}.mp4` : `${this.url}/v1beta/files/${id}:download?alt=media` } },
              ],
            },
          },
        });
    }
  }

  // Gemini API models.get (ai.google.dev/api/rest/v1beta/models/get): GET /v1beta/models/{model} with
  // `x-goog-api-key` → a Model { name: "models/{model}", … }; a model it does not serve → 404 NOT_FOUND.
  protected override modelsOp(method: string, path: string): 'models' | undefined {
    return method === 'GET' && /^\/v1beta\/models\/[^/:]+$/.test(path) ? 'models' : undefined;
  }

  protected override modelsAnswer(req: RecordedRequest): Answer {
    if (req.headers['x-goog-api-key'] !== this.key)
      return googleError(403, 'PERMISSION_DENIED', "Method doesn't allow unregistered callers. Please use API Key.");
    const id = decodeURIComponent(req.path.split('/').pop()!);
    if (!(googleVeoModelIds as readonly string[]).includes(id) || this.lostModels.has(id))
      return googleError(404, 'NOT_FOUND', `models/${id} is not found for API version v1beta, or is not supported for predictLongRunning.`);
    return json(200, { name: `models/${id}`, version: '3.1', displayName: id, supportedGenerationMethods: ['predictLongRunning'] });
  }
}

export async function startFakeGoogle(key?: string): Promise<FakeGoogle> {
  return new FakeGoogle(key).start();
}
