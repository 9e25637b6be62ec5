// BytePlus ModelArk ("Ark") adapter, the second route of seedream-4.5 and seedance-1.5 (contract and
// sources in providers/byteplus/contract.ts). Bearer auth with ARK_API_KEY against ARK_BASE_URL, which may carry
// the SDK's `/api/v3` (it is dropped, so paths are never /api/v3/api/v3/…).
//  - Images (Seedream 4.5): POST /api/v3/images/generations is synchronous, so submit does the work,
//    one call per image (sequential_image_generation "disabled": the model otherwise decides how many
//    it makes), b64_json decoded straight into our store; the ref carries only the keys. Every call is
//    a paid generation with no idempotency key: a retried submit first looks for the images an earlier
//    attempt already stored, and the timeout follows the SDK's 600 s.
//  - Videos (Seedance 1.5 pro), text-to-video: POST /api/v3/contents/generations/tasks → { id }; GET …/tasks/{id}
//    until succeeded (content.video_url, a signed URL fetched without our key) or failed
//    (error { code, message }); cancel is DELETE …/tasks/{id}, sent only to a task read as queued (Ark
//    cancels a queued task, refuses a running one and deletes a finished one's record: see cancel).
// Errors (providers/byteplus/errors.ts, from Ark's error codes): 5xx, 408, 429 rate limits and network timeouts
// are retried (then failover); 401/403, an overdue account and a quota code are our account's, an
// endpoint or model not enabled for our account the route's (failover at once); sensitive-content
// codes and invalid parameters are the request's (final, no failover).
import type { PollResult, ProviderAdapter, ProviderContext, ProviderRef, ProviderRequest, InputFile } from '../../activities/providers/types.js';
import { notConfirmed, ProviderError } from '../../activities/providers/types.js';
import type { AdapterModule } from '../../activities/providers/adapter-module.js';
import { joinUrl, malformed, parseJson, providerFetch, readText, type HttpCallOptions } from '../../activities/providers/http.js';
import { classify, errorOfRow, taskOutcome } from '../../activities/providers/error-table.js';
import { byteplusErrors, byteplusFacts } from './errors.js';
import {
  arkSeedanceModelId,
  arkSeedanceRatios,
  arkSeedanceResolutions,
  arkSeedreamModelId,
  arkSeedreamAspectRatios,
  arkSeedreamSizes,
  type ArkError,
  type ArkImageGenerationRequest,
  type ArkImagesResponse,
  type ArkTask,
  type ArkTaskCreated,
  type ArkVideoTaskRequest,
} from './contract.js';
import { jobOutputKey } from '../../shared/job-media.js';
import { sniffMediaType } from '../../shared/media/type.js';
import { longestCallMs } from '../../activities/providers/call-timeouts.js';
import { exact, oneOf } from '../../activities/providers/body-check.js';

interface ByteplusConfig {
  key: string;
  baseUrl: string;
  /** Status, create and cancel calls; default 30 s. */
  timeoutMs?: number;
  /** The synchronous image call; default 600 s, as the SDK. */
  imageTimeoutMs?: number;
  /** Model ids sent instead of the catalog's (an Ark Endpoint ID "ep-…" works too). */
  seedreamModel?: string | undefined;
  seedanceModel?: string | undefined;
}

interface ByteplusImageRef {
  provider: 'byteplus';
  jobId: string;
  outputs: { key: string; contentType: string; size: number }[];
}

interface ByteplusTaskRef {
  provider: 'byteplus';
  jobId: string;
  taskId: string;
}

/** The API origin from a base URL given with or without the SDK's `/api/v3`. */
export function arkOrigin(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/api\/v3$/, '');
}

/** An HTTP error answer classed by Ark's codes (providers/byteplus/errors.ts). */
function byteplusHttpError(res: Response, text: string, o: HttpCallOptions): ProviderError {
  const facts = byteplusFacts(res, text);
  return errorOfRow(classify(byteplusErrors, facts), facts, o);
}

/** A failed task's (or image's) error, classed by the same codes: the provider's faults are retried (then failover); the rest are final. */
function taskFailure(err: ArkError | null | undefined): PollResult | ProviderError {
  const code = typeof err?.code === 'string' && err.code ? err.code : undefined;
  const reason = `${typeof err?.message === 'string' && err.message ? err.message : 'no reason given'}${code ? ` (${code})` : ''}`;
  return taskOutcome(byteplusErrors, { code, reason }, 'BytePlus');
}

const byRole = (inputs: InputFile[], ...roles: InputFile['role'][]) => inputs.filter((i) => roles.includes(i.role));

export function createByteplusAdapter(cfg: ByteplusConfig): ProviderAdapter {
  const timeoutMs = cfg.timeoutMs ?? 30_000;
  const imageTimeoutMs = cfg.imageTimeoutMs ?? longestCallMs.byteplus;
  const base = arkOrigin(cfg.baseUrl);
  const headers = { authorization: `Bearer ${cfg.key}`, accept: 'application/json' };
  const opts = (what: string, ctx: ProviderContext, ms = timeoutMs): HttpCallOptions => ({
    provider: 'BytePlus',
    what,
    timeoutMs: ms,
    signal: ctx.signal,
    secrets: [cfg.key],
  });
  const tasksUrl = joinUrl(base, '/api/v3/contents/generations/tasks');
  const taskUrl = (id: string) => `${tasksUrl}/${encodeURIComponent(id)}`;

  async function callJson<T>(url: string, init: RequestInit, o: HttpCallOptions): Promise<T> {
    const res = await providerFetch(url, init, o);
    const text = await readText(res, o);
    if (!res.ok) throw byteplusHttpError(res, text, o);
    return parseJson<T>(text, o);
  }

  /** The model id to send: the configured override for the route's id, else the stored id. */
  function modelFor(req: ProviderRequest): string {
    const alt = req.route.alternates?.find((a) => a.provider === 'byteplus');
    const id = req.providerModelId ?? (req.route.provider === 'byteplus' ? req.route.providerModelId : alt?.providerModelId);
    if (!id) throw new ProviderError(`${req.model} has no BytePlus route in the catalog`, { retryable: false });
    if (id === arkSeedreamModelId && cfg.seedreamModel) return cfg.seedreamModel;
    if (id === arkSeedanceModelId && cfg.seedanceModel) return cfg.seedanceModel;
    return id;
  }

  async function storedImage(ctx: ProviderContext, jobId: string, n: number): Promise<ByteplusImageRef['outputs'][number] | undefined> {
    for (const [ext, contentType] of [
      ['jpg', 'image/jpeg'],
      ['png', 'image/png'],
      ['webp', 'image/webp'],
    ] as const) {
      const key = jobOutputKey(ctx.storage, jobId, n, ext);
      const st = await ctx.storage.stat(key);
      if (st && st.size > 0) return { key, contentType, size: st.size };
    }
    return undefined;
  }

  async function generateImages(req: ProviderRequest, ctx: ProviderContext): Promise<ProviderRef> {
    const o = opts('image generation', ctx, imageTimeoutMs);
    const model = modelFor(req);
    const size = arkSeedreamSizes[oneOf('BytePlus', 'aspect ratio', arkSeedreamAspectRatios, req.aspectRatio ?? req.route.defaultAspectRatio)];
    const refs = byRole(req.inputs, 'reference', 'image');
    const image = refs.length ? await Promise.all(refs.map((r) => ctx.inputUrl(r.key))) : undefined;
    const outputs: ByteplusImageRef['outputs'] = [];
    for (let n = 1; n <= (req.count ?? 1); n++) {
      // An image an earlier attempt stored (then failed to report) was already paid for.
      const earlier = await storedImage(ctx, req.jobId, n);
      if (earlier) {
        outputs.push(earlier);
        continue;
      }
      const body = exact<ArkImageGenerationRequest>()({
        model,
        prompt: req.prompt ?? '',
        ...(image ? { image: image.length === 1 ? image[0]! : image } : {}),
        size,
        sequential_image_generation: 'disabled',
        response_format: 'b64_json',
        watermark: false,
      });
      // Keep the activity alive while the synchronous call runs.
      const beat = setInterval(() => ctx.heartbeat({ phase: 'byteplus-images', image: n }), 10_000);
      let answer: ArkImagesResponse;
      try {
        answer = await callJson<ArkImagesResponse>(
          joinUrl(base, '/api/v3/images/generations'),
          { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) },
          o,
        );
      } finally {
        clearInterval(beat);
      }
      const item = Array.isArray(answer.data) ? answer.data[0] : undefined;
      if (!item) {
        // A 200 with `error` and no image: per image, as the SDK's ImagesResponse allows.
        if (answer.error) {
          const failure = taskFailure(answer.error);
          if (failure instanceof ProviderError) throw failure;
          throw new ProviderError(failure.message!, { retryable: false, status: 400 });
        }
        throw malformed(o, 'no image in "data"');
      }
      if (typeof item.b64_json !== 'string' || !item.b64_json) throw malformed(o, `image ${n} has no b64_json`);
      const bytes = Buffer.from(item.b64_json, 'base64');
      const type = sniffMediaType(bytes.subarray(0, 4096));
      if (!type || type.fileType !== 'image') throw malformed(o, `image ${n} is not a JPEG, PNG or WebP image`);
      const key = jobOutputKey(ctx.storage, req.jobId, n, type.ext);
      const stored = await ctx.storage.putStream(key, bytes, type.mime, bytes.length);
      outputs.push({ key, contentType: type.mime, size: stored.size });
    }
    const ref: ByteplusImageRef = { provider: 'byteplus', jobId: req.jobId, outputs };
    return { ...ref };
  }

  async function createVideoTask(req: ProviderRequest, ctx: ProviderContext): Promise<ProviderRef> {
    const o = opts('video generation', ctx);
    // The create-time check (catalog accepts) keeps these jobs off this route; refuse rather than drop inputs.
    if (req.inputs.length > 0)
      throw new ProviderError(`BytePlus: ${req.model} is text-to-video only on this route; the job has image inputs`, { retryable: false });
    if (!req.prompt) throw new ProviderError(`BytePlus: ${req.model} needs a prompt on this route`, { retryable: false });
    const content: ArkVideoTaskRequest['content'] = [{ type: 'text', text: req.prompt }];
    const body = exact<ArkVideoTaskRequest>()({
      model: modelFor(req),
      content,
      ratio: oneOf('BytePlus', 'ratio', arkSeedanceRatios, req.aspectRatio ?? req.route.defaultAspectRatio),
      duration: req.duration ?? req.route.defaultDuration,
      resolution: oneOf('BytePlus', 'resolution', arkSeedanceResolutions, req.resolution ?? req.route.defaultResolution),
      // Audio unless the create asked for none (the catalog's controls: seed and audio on this route).
      generate_audio: req.audio ?? true,
      watermark: false,
      ...(req.seed !== undefined ? { seed: req.seed } : {}),
    });
    const created = await callJson<Partial<ArkTaskCreated>>(
      tasksUrl,
      { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) },
      o,
    );
    if (typeof created.id !== 'string' || !created.id) throw malformed(o, 'no task id in the answer');
    const ref: ByteplusTaskRef = { provider: 'byteplus', jobId: req.jobId, taskId: created.id };
    return { ...ref };
  }

  const isImageRef = (ref: ProviderRef): boolean => Array.isArray((ref as Partial<ByteplusImageRef>).outputs);
  const taskIdOf = (ref: ProviderRef): string => {
    const id = (ref as Partial<ByteplusTaskRef>).taskId;
    if (typeof id !== 'string' || !id) throw new ProviderError('BytePlus: the stored provider ref is incomplete', { retryable: false });
    return id;
  };

  return {
    name: 'byteplus',
    async submit(req, ctx) {
      if (req.route.kind === 'image') return generateImages(req, ctx);
      if (req.route.kind === 'video') return createVideoTask(req, ctx);
      throw new ProviderError(`BytePlus serves only image and video models here, not ${req.model}`, { retryable: false });
    },

    async poll(ref, ctx): Promise<PollResult> {
      if (isImageRef(ref)) {
        const { outputs } = ref as unknown as ByteplusImageRef;
        return { state: 'succeeded', percent: 100, outputs: outputs.map((x) => ({ key: x.key, contentType: x.contentType, size: x.size })) };
      }
      const o = opts('status', ctx);
      const task = await callJson<Partial<ArkTask>>(taskUrl(taskIdOf(ref)), { method: 'GET', headers }, o);
      switch (task.status) {
        case 'queued':
          return { state: 'queued' };
        case 'running':
          return { state: 'running' };
        case 'succeeded': {
          const url = task.content?.video_url;
          if (typeof url !== 'string' || !/^https?:\/\//.test(url)) throw malformed(o, 'a succeeded task without content.video_url');
          return { state: 'succeeded', percent: 100, outputs: [{ url, contentType: 'video/mp4' }] };
        }
        case 'failed': {
          const failure = taskFailure(task.error);
          if (failure instanceof ProviderError) throw failure;
          return failure;
        }
        case 'cancelled':
          return { state: 'failed', message: 'BytePlus: the task was cancelled at the provider' };
        case 'expired':
          // Never started within its expiry: the provider's capacity, not the request.
          throw new ProviderError('BytePlus: the task expired in the provider queue', { retryable: true, status: 503 });
        default:
          throw malformed(o, `unknown task status ${JSON.stringify(task.status)}`);
      }
    },

    async cancel(ref, ctx) {
      // Images complete inside submit: nothing left to stop.
      if (isImageRef(ref)) return notConfirmed;
      // Ark's DELETE …/tasks/{id} ("Cancel or delete a video generation task", docs.byteplus.com
      // ModelArk API reference, read 2026-12-02) acts by the task's status: a queued task is cancelled
      // (it never runs, nothing is billed), a finished one (succeeded, failed, expired) has its record
      // deleted, and a running one is refused. A 2xx therefore says nothing by itself: the task is read
      // first, and only a queued one is sent the DELETE, whose success is then a confirmed cancel. A
      // running or finished task is left alone (best effort; the refund follows the cancel policy), so
      // a finished task's record and output are never deleted by a cancel.
      const o = opts('cancel', ctx);
      const id = taskIdOf(ref);
      // An outage reading the task is retried like the DELETE's; a task Ark no longer knows has nothing to cancel.
      const task = await callJson<Partial<ArkTask>>(taskUrl(id), { method: 'GET', headers }, opts('status before cancel', ctx)).catch((err: unknown) => {
        if (err instanceof ProviderError && err.retryable) throw err;
        return undefined;
      });
      if (task?.status !== 'queued') return notConfirmed;
      const res = await providerFetch(taskUrl(id), { method: 'DELETE', headers }, o);
      const text = await readText(res, o);
      if (res.ok) return { confirmed: true };
      // 4xx: the task started between the read and the DELETE (a running task is refused), or is gone.
      if (res.status >= 400 && res.status < 500 && res.status !== 401 && res.status !== 403 && res.status !== 429) return notConfirmed;
      throw byteplusHttpError(res, text, o);
    },
  };
}

export const createAdapter: AdapterModule['createAdapter'] = (c) =>
  createByteplusAdapter({ key: c.ARK_API_KEY!, baseUrl: c.ARK_BASE_URL, seedreamModel: c.ARK_SEEDREAM_MODEL, seedanceModel: c.ARK_SEEDANCE_MODEL });
