// A local DashScope (Alibaba Cloud Model Studio) server speaking the task protocol of
// providers/alibaba/contract.ts: POST /api/v1/services/aigc/image2video/video-synthesis with `Authorization:
// Bearer <key>` and `X-DashScope-Async: enable`, the body validated against the fake's own contract
// (./contracts/alibaba.ts, transcribed apart from the adapter's), and both input URLs fetched (DashScope downloads them) → { request_id,
// output: { task_id, task_status: "PENDING" } }; GET /api/v1/tasks/{task_id} → PENDING, RUNNING, then
// SUCCEEDED with output.results.video_url, or FAILED with output.code / output.message; UNKNOWN for a
// task it does not know; POST /api/v1/tasks/{task_id}/cancel cancels a PENDING task and refuses any
// other with 400 UnsupportedOperation. Errors are DashScope's { request_id, code, message }. The video
// is served by this server (GET /files/{id}.mp4) or, with `filesBaseUrl` set, by that origin (a
// loopback HTTPS "CDN" in end-to-end tests).
import { randomUUID } from 'node:crypto';
import { dashscopeFakeAnimateMixRequest } from './contracts/alibaba.js';
import { FakeServer, json, tinyPng, type Answer, type RecordedRequest } from './server.js';
import { followingFrame, noteFile } from './media.js';

export type AlibabaOutcome = 'success' | 'failed' | 'moderated' | 'internal' | 'throttled' | 'arrearage' | 'unavailable' | 'moderated-input';

const dashscopeError = (status: number, code: string, message: string): Answer => json(status, { request_id: randomUUID(), code, message });

interface TaskState {
  polls: number;
  outcome: AlibabaOutcome;
  canceled: boolean;
  /** The input URLs as received. */
  input: { image_url: string; video_url: string };
}

export class FakeAlibaba extends FakeServer {
  readonly key: string;
  /** Status calls answering PENDING, then RUNNING, before a task ends. */
  pendingPolls = 1;
  runningPolls = 1;
  readonly tasks = new Map<string, TaskState>();
  private readonly outcomes: AlibabaOutcome[] = [];
  /** When set, video URLs point at `${filesBaseUrl}/files/{id}.mp4` instead of this server. */
  filesBaseUrl: string | undefined;
  /** Input downloads as fetched at submit: content type and size of each. */
  readonly fetchedInputs: { url: string; contentType: string | null; bytes: number }[] = [];

  constructor(key = 'sk-dashscope-test-0123456789') {
    super(
      (method, path) =>
        method === 'POST' && path === '/api/v1/services/aigc/image2video/video-synthesis'
          ? 'submit'
          : method === 'GET' && /^\/api\/v1\/tasks\/[^/]+$/.test(path)
            ? 'status'
            : method === 'POST' && /^\/api\/v1\/tasks\/[^/]+\/cancel$/.test(path)
              ? 'cancel'
              : method === 'GET' && path.startsWith('/files/')
                ? 'file'
                : undefined,
      (req) => this.answer(req),
    );
    this.key = key;
  }

  nextOutcome(o: AlibabaOutcome): this {
    this.outcomes.push(o);
    return this;
  }

  private async answer(req: RecordedRequest): Promise<Answer> {
    if (req.op === 'file') return { status: 200, headers: { 'content-type': 'video/mp4' }, body: tinyPng };
    if (req.headers.authorization !== `Bearer ${this.key}`) return dashscopeError(401, 'InvalidApiKey', 'Invalid API-key provided.');
    if (req.op === 'submit') return this.submit(req);
    const id = decodeURIComponent(req.path.split('/')[4]!);
    const task = this.tasks.get(id);
    if (req.op === 'cancel') {
      if (!task) return dashscopeError(404, 'NotFound', 'Task not found.');
      if (this.statusOf(task) !== 'PENDING')
        return dashscopeError(400, 'UnsupportedOperation', 'Failed to cancel the task, please confirm if the task is in PENDING status.');
      task.canceled = true;
      return json(200, { request_id: randomUUID() });
    }
    // GET /tasks/{id}: DashScope answers 200 UNKNOWN for a task it does not know.
    if (!task) return json(200, { request_id: randomUUID(), output: { task_id: id, task_status: 'UNKNOWN' } });
    const status = this.statusOf(task);
    task.polls++;
    const output: Record<string, unknown> = { task_id: id, task_status: status, submit_time: '2026-11-25 22:00:00.000' };
    if (status === 'SUCCEEDED') {
      output.results = { video_url: this.filesBaseUrl ? `${this.filesBaseUrl}/files/${id}.mp4` : `${this.url}/files/${id}.mp4?Expires=1&Signature=x` };
      return json(200, { request_id: randomUUID(), output, usage: { video_duration: 3, video_ratio: 'standard' } });
    }
    if (status === 'FAILED') {
      const [code, message] =
        task.outcome === 'moderated'
          ? ['DataInspectionFailed', 'Output data may contain inappropriate content.']
          : task.outcome === 'internal'
            ? ['InternalError', 'An internal error has occured, please try again later.']
            : ['InvalidParameter', 'The character in the image could not be detected.'];
      Object.assign(output, { code, message });
    }
    return json(200, { request_id: randomUUID(), output });
  }

  private statusOf(task: TaskState): string {
    if (task.canceled) return 'CANCELED';
    if (task.polls < this.pendingPolls) return 'PENDING';
    if (task.polls < this.pendingPolls + this.runningPolls) return 'RUNNING';
    return task.outcome === 'success' ? 'SUCCEEDED' : 'FAILED';
  }

  private async submit(req: RecordedRequest): Promise<Answer> {
    if (req.headers['x-dashscope-async'] !== 'enable') return dashscopeError(403, 'AccessDenied', 'current user api does not support synchronous calls');
    if (!String(req.headers['content-type'] ?? '').startsWith('application/json'))
      return dashscopeError(400, 'InvalidParameter', 'Content-Type must be application/json');
    const parsed = dashscopeFakeAnimateMixRequest.safeParse(req.json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      return dashscopeError(400, 'InvalidParameter', `${issue.path.join('.') || 'body'}: ${issue.message}`);
    }
    const outcome = this.outcomes.shift() ?? 'success';
    if (outcome === 'throttled') return dashscopeError(429, 'Throttling.RateQuota', 'Requests rate limit exceeded, please try again later.');
    if (outcome === 'arrearage') return dashscopeError(400, 'Arrearage', 'Access denied, please make sure your account is in good standing.');
    if (outcome === 'unavailable') return dashscopeError(503, 'ServiceUnavailable', 'The service is temporarily unavailable.');
    if (outcome === 'moderated-input') return dashscopeError(400, 'DataInspectionFailed', 'Input data may contain inappropriate content.');
    // DashScope downloads both inputs: they must be reachable URLs.
    for (const url of [parsed.data.input.image_url, parsed.data.input.video_url]) {
      const res = await fetch(url).catch(() => undefined);
      if (!res?.ok) return dashscopeError(400, 'InvalidParameter', `url download failed: ${url.split('?')[0]}`);
      this.fetchedInputs.push({ url, contentType: res.headers.get('content-type'), bytes: (await res.arrayBuffer()).byteLength });
    }
    const id = randomUUID();
    this.tasks.set(id, { polls: 0, outcome, canceled: false, input: parsed.data.input });
    // Alibaba documents no output frame for wan-std: with documented media on, the fake answers the
    // motion video's shape at 480p, a frame the output store has to scale.
    noteFile(`/files/${id}.mp4`, followingFrame(parsed.data.input.video_url, '480p'));
    return json(200, { request_id: randomUUID(), output: { task_id: id, task_status: 'PENDING' } });
  }
}

export async function startFakeAlibaba(key?: string): Promise<FakeAlibaba> {
  return new FakeAlibaba(key).start();
}
