// A local BytePlus ModelArk ("Ark") server speaking the protocol of providers/byteplus/contract.ts, with
// `Authorization: Bearer {key}` and bodies validated against the fake's own contract
// (./contracts/byteplus.ts, transcribed from ByteDance's SDK apart from the adapter's):
//  - POST /api/v3/images/generations → { model, created_at, data: [{ b64_json, size }] } (synchronous);
//  - POST /api/v3/contents/generations/tasks → { id }; GET …/tasks/{id} → { id, model, status:
//    queued, then running, then succeeded (content.video_url) or failed (error { code, message }) };
//    DELETE …/tasks/{id} acts by the task's status, as Ark's "Cancel or delete a video generation task"
//    documents: a queued task is cancelled (status cancelled), a finished one (succeeded, failed,
//    expired) has its record deleted (answered 2xx like a cancel; the task is then not found), a
//    running or cancelled one is refused.
// Errors are Ark's { error: { code, message, param?, type } }. Video URLs are on this server
// (GET /files/{id}.mp4), or, with `filesBaseUrl` set, on that origin (a loopback HTTPS "CDN" in
// end-to-end tests).
import { randomUUID } from 'node:crypto';
import { arkFakeDurationRefusal, arkFakeEndpointId, arkFakeImageRequest, arkFakeModelIds, arkFakeVideoTaskRequest } from './contracts/byteplus.js';
import { FakeServer, json, tinyPng, type Answer, type RecordedRequest } from './server.js';
import { documentedFrame, documentedMedia, noteFile, shapedMedia, sizeOf } from './media.js';

export type ArkImageOutcome = 'success' | 'sensitive' | 'unavailable' | 'quota';
export type ArkTaskOutcome = 'success' | 'failed' | 'sensitive' | 'internal' | 'unavailable' | 'quota';

const arkError = (status: number, code: string, message: string, type: string, param?: string): Answer =>
  json(status, { error: { code, message: `${message} Request id: 0217${randomUUID().slice(0, 8)}`, ...(param ? { param } : {}), type } });

const invalid = (issue: { path: PropertyKey[]; message: string }) =>
  arkError(
    400,
    'InvalidParameter',
    `The parameter \`${issue.path.join('.') || 'body'}\` specified in the request is not valid: ${issue.message}.`,
    'BadRequest',
    issue.path.join('.') || undefined,
  );

export class FakeByteplus extends FakeServer {
  readonly key: string;
  /** Status calls answering `queued`, then `running`, before a task is final. */
  queuedPolls = 1;
  runningPolls = 1;
  readonly tasks = new Map<string, { polls: number; outcome: ArkTaskOutcome; model: string; status: string }>();
  /** Finished tasks whose record a DELETE removed. */
  readonly deleted = new Set<string>();
  private readonly imageOutcomes: ArkImageOutcome[] = [];
  private readonly taskOutcomes: ArkTaskOutcome[] = [];
  /** When set, video URLs point at `${filesBaseUrl}/files/{id}.mp4` instead of this server. */
  filesBaseUrl: string | undefined;

  constructor(key = 'ark-test-key-0123456789abcdef') {
    super(
      (method, path) =>
        method === 'POST' && path === '/api/v3/images/generations'
          ? 'image'
          : method === 'POST' && path === '/api/v3/contents/generations/tasks'
            ? 'submit'
            : method === 'GET' && /^\/api\/v3\/contents\/generations\/tasks\/[^/]+$/.test(path)
              ? 'status'
              : method === 'DELETE' && /^\/api\/v3\/contents\/generations\/tasks\/[^/]+$/.test(path)
                ? 'cancel'
                : method === 'GET' && path.startsWith('/files/')
                  ? 'file'
                  : undefined,
      (req) => this.answer(req),
    );
    this.key = key;
  }

  nextImage(o: ArkImageOutcome): this {
    this.imageOutcomes.push(o);
    return this;
  }

  nextTask(o: ArkTaskOutcome): this {
    this.taskOutcomes.push(o);
    return this;
  }

  /** Seedream answers JPEG at the asked size (with documented media on; the placeholder otherwise). */
  imageFormat: 'jpeg' | 'png' | 'webp' = 'jpeg';
  private async imageBytes(size: string | undefined): Promise<Buffer> {
    const s = sizeOf(size);
    return documentedMedia.on && s ? shapedMedia({ format: this.imageFormat, ...s }) : tinyPng;
  }

  private knownModel(model: unknown): boolean {
    return typeof model === 'string' && (arkFakeModelIds.includes(model) || arkFakeEndpointId.test(model));
  }

  private answer(req: RecordedRequest): Answer | Promise<Answer> {
    if (req.op === 'file') return { status: 200, headers: { 'content-type': 'video/mp4' }, body: tinyPng };
    if (req.headers.authorization !== `Bearer ${this.key}`)
      return arkError(401, 'AuthenticationError', 'The API key or AK/SK in the request is missing or invalid.', 'Unauthorized');
    switch (req.op) {
      case 'image':
        return this.image(req);
      case 'submit':
        return this.submit(req);
      case 'cancel':
        return this.cancel(req);
      default:
        return this.status(req);
    }
  }

  private async image(req: RecordedRequest): Promise<Answer> {
    const parsed = arkFakeImageRequest.safeParse(req.json);
    if (!parsed.success) return invalid(parsed.error.issues[0]!);
    if (!this.knownModel(parsed.data.model))
      return arkError(
        404,
        'InvalidEndpointOrModel.NotFound',
        `The model or endpoint ${parsed.data.model} does not exist or you do not have access to it.`,
        'NotFound',
      );
    switch (this.imageOutcomes.shift() ?? 'success') {
      case 'sensitive':
        return arkError(400, 'InputTextSensitiveContentDetected', 'The request failed because the input text may contain sensitive information.', 'BadRequest');
      case 'unavailable':
        return arkError(503, 'ServiceUnavailable', 'The service is temporarily unavailable.', 'ServiceUnavailable');
      case 'quota':
        return arkError(429, 'QuotaExceeded', 'The request has exceeded the quota of your account.', 'TooManyRequests');
      default:
        return json(200, {
          model: parsed.data.model,
          created_at: Math.floor(Date.now() / 1000),
          data: [{ b64_json: (await this.imageBytes(parsed.data.size)).toString('base64'), size: parsed.data.size }],
          usage: { generated_images: 1 },
        });
    }
  }

  private submit(req: RecordedRequest): Answer {
    const parsed = arkFakeVideoTaskRequest.safeParse(req.json);
    if (!parsed.success) return invalid(parsed.error.issues[0]!);
    if (!this.knownModel(parsed.data.model))
      return arkError(
        404,
        'InvalidEndpointOrModel.NotFound',
        `The model or endpoint ${parsed.data.model} does not exist or you do not have access to it.`,
        'NotFound',
      );
    const badDuration = arkFakeDurationRefusal(parsed.data.model, parsed.data.duration);
    if (badDuration) return arkError(400, 'InvalidParameter', badDuration, 'BadRequest');
    const outcome = this.taskOutcomes.shift() ?? 'success';
    if (outcome === 'quota') return arkError(429, 'QuotaExceeded', 'The request has exceeded the quota of your account.', 'TooManyRequests');
    if (outcome === 'unavailable') return arkError(503, 'ServiceUnavailable', 'The service is temporarily unavailable.', 'ServiceUnavailable');
    const id = `cgt-${new Date().toISOString().slice(0, 10).replace(/-/g, '')}-${randomUUID().slice(0, 8)}`;
    this.tasks.set(id, { polls: 0, outcome, model: parsed.data.model, status: 'queued' });
    const frame = documentedFrame(parsed.data.ratio, parsed.data.resolution);
    noteFile(`/files/${id}.mp4`, frame && { format: 'mp4', ...frame });
    return json(200, { id });
  }

  private taskOf(req: RecordedRequest) {
    const id = decodeURIComponent(req.path.split('/').at(-1)!);
    return { id, task: this.tasks.get(id) };
  }

  private status(req: RecordedRequest): Answer {
    const { id, task } = this.taskOf(req);
    if (!task) return arkError(404, 'ResourceNotFound', `The specified task ${id} is not found.`, 'NotFound');
    const base = { id, model: task.model, created_at: 1764000000, updated_at: 1764000000 + task.polls };
    if (task.status === 'cancelled') return json(200, { ...base, status: 'cancelled' });
    task.polls++;
    if (task.polls <= this.queuedPolls) return json(200, { ...base, status: (task.status = 'queued') });
    if (task.polls <= this.queuedPolls + this.runningPolls) return json(200, { ...base, status: (task.status = 'running') });
    switch (task.outcome) {
      case 'failed':
        return json(200, {
          ...base,
          status: (task.status = 'failed'),
          error: { code: 'InvalidParameter', message: 'The generation could not be completed with the given parameters.' },
        });
      case 'sensitive':
        return json(200, {
          ...base,
          status: (task.status = 'failed'),
          error: { code: 'OutputVideoSensitiveContentDetected', message: 'The request failed because the output video may contain sensitive information.' },
        });
      case 'internal':
        return json(200, {
          ...base,
          status: (task.status = 'failed'),
          error: { code: 'InternalServiceError', message: 'The service encountered an unexpected internal error.' },
        });
      default:
        return json(200, {
          ...base,
          status: (task.status = 'succeeded'),
          content: { video_url: `${this.filesBaseUrl ?? this.url}/files/${id}.mp4` },
          duration: 5,
          ratio: '16:9',
          resolution: '720p',
          usage: { completion_tokens: 108900 },
        });
    }
  }

  private cancel(req: RecordedRequest): Answer {
    const { id, task } = this.taskOf(req);
    if (!task) return arkError(404, 'ResourceNotFound', `The specified task ${id} is not found.`, 'NotFound');
    if (task.status === 'queued') {
      task.status = 'cancelled';
      return json(200, {});
    }
    if (task.status === 'succeeded' || task.status === 'failed' || task.status === 'expired') {
      this.tasks.delete(id);
      this.deleted.add(id);
      return json(200, {});
    }
    return arkError(400, 'InvalidParameter', `The task ${id} is ${task.status} and cannot be cancelled.`, 'BadRequest');
  }

  /** The task finishes at Ark now (as its outcome says): its next status call answers it final. */
  finishTask(id: string): void {
    const task = this.tasks.get(id);
    if (!task) throw new Error(`no task ${id}`);
    task.polls = this.queuedPolls + this.runningPolls;
    task.status = task.outcome === 'success' ? 'succeeded' : 'failed';
  }
}

export async function startFakeByteplus(key?: string): Promise<FakeByteplus> {
  return new FakeByteplus(key).start();
}
