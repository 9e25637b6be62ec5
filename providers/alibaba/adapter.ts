// Alibaba Cloud Model Studio (DashScope) adapter: Wan 2.2 Animate Mix, replace-actor's second route
// (providers/alibaba/contract.ts names the sources). POST {base}/api/v1/services/aigc/image2video/video-synthesis
// with `Authorization: Bearer <key>`, `X-DashScope-Async: enable` and { model, input: { image_url,
// video_url }, parameters: { mode } } → output.task_id; GET {base}/api/v1/tasks/{task_id} until
// output.task_status is final, the video at output.results.video_url (a signed OSS URL, fetched without
// our key); cancel is POST {base}/api/v1/tasks/{task_id}/cancel, which DashScope honours for PENDING
// tasks only. DashScope documents no idempotency key: the pipeline records the ref before anything else
// can fail and polls it on a retry (activities/jobs.ts submitAndCheck), as for fal.
//
// The inputs go as they go to fal: the motion video is conformed to the job's duration and aspect ratio
// at 720p (conform.ts), so the output is what was asked and priced; the actor image is center-cropped
// to the same frame as a PNG (Alibaba advises an image shaped like the video, and fal crops it so
// itself), which keeps both inside the documented size limits; both reach Alibaba as presigned URLs
// of our store (ctx.inputUrl).
//
// Errors (providers/alibaba/errors.ts, from DashScope's error code reference): 5xx, timeouts and 429 rate limits
// are retried, then the job moves to its next route; Arrearage, Throttling.AllocationQuota (a used-up
// quota) and 401/403 are our account, ModelNotFound (not in our region) the route: the job moves at
// once; DataInspectionFailed (moderation), InvalidParameter and other 4xx are the request's: final.
import type { InputFile, PollResult, ProviderAdapter, ProviderContext, ProviderRef, ProviderRequest } from '../../activities/providers/types.js';
import { notConfirmed, ProviderError } from '../../activities/providers/types.js';
import type { AdapterModule } from '../../activities/providers/adapter-module.js';
import { defaultTimeoutMs, joinUrl, malformed, parseJson, providerFetch, readText, type HttpCallOptions } from '../../activities/providers/http.js';
import { classify, errorOfRow, taskOutcome } from '../../activities/providers/error-table.js';
import { alibabaErrors, alibabaFacts } from './errors.js';
import { conformActorImage, conformMotionVideo } from '../../activities/providers/conform.js';
import { mediaToolsFrom, type MediaTools } from '../../activities/providers/media-tools.js';
import { oneOf } from '../../activities/providers/body-check.js';
import {
  alibabaAnimateMixModelIds,
  dashscopeAsyncHeader,
  type AlibabaAnimateMixMode,
  type AlibabaAnimateMixRequest,
  type DashScopeTaskAnswer,
} from './contract.js';

interface AlibabaConfig {
  key: string;
  baseUrl: string;
  timeoutMs?: number;
  /** ffmpeg and its caps, to conform the inputs (conform.ts). */
  media?: MediaTools;
}

interface AlibabaRef {
  provider: 'alibaba';
  jobId: string;
  taskId: string;
}

/**
 * Standard mode: Alibaba describes wan-std as the fast, cost-effective mode and wan-pro as smoother
 * (help.aliyun.com wan-animate-mix-api, "模型与价格": 0.6 vs 0.9 yuan per second, 1.5×). A failover job
 * keeps the price charged at create, and this route runs while the job's deadline is already partly
 * spent, so the faster, cheaper mode is the one used.
 */
export const alibabaAnimateMixMode: AlibabaAnimateMixMode = 'wan-std';

/** The API origin from a base URL given with or without the `/api/v1` of the SDK's base URL. */
export function dashscopeOrigin(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/api\/v1$/, '');
}

/** An HTTP error answer ({ request_id, code, message }) classed by DashScope's codes (providers/alibaba/errors.ts). */
function dashscopeHttpError(res: Response, text: string, o: HttpCallOptions): ProviderError {
  const facts = alibabaFacts(res, text);
  return errorOfRow(classify(alibabaErrors, facts), facts, o);
}

/** A FAILED task, classed by the same codes: the provider's trouble is retried (then another route), the route's or account's moves at once, the request's is final. */
function taskFailure(answer: DashScopeTaskAnswer): PollResult | ProviderError {
  const out = answer.output ?? {};
  const code = typeof out.code === 'string' ? out.code : typeof answer.code === 'string' ? answer.code : undefined;
  const text = typeof out.message === 'string' ? out.message : typeof answer.message === 'string' ? answer.message : 'no reason given';
  return taskOutcome(alibabaErrors, { code, reason: `${text}${code ? ` (${code})` : ''}` }, 'Alibaba');
}

const byRole = (inputs: InputFile[], ...roles: InputFile['role'][]) => inputs.find((i) => roles.includes(i.role));

export function createAlibabaAdapter(cfg: AlibabaConfig): ProviderAdapter {
  const timeoutMs = cfg.timeoutMs ?? defaultTimeoutMs;
  const base = dashscopeOrigin(cfg.baseUrl);
  const headers = { authorization: `Bearer ${cfg.key}`, accept: 'application/json' };
  const opts = (what: string, ctx: ProviderContext): HttpCallOptions => ({ provider: 'Alibaba', what, timeoutMs, signal: ctx.signal, secrets: [cfg.key] });

  async function callJson(url: string, init: RequestInit, o: HttpCallOptions): Promise<DashScopeTaskAnswer> {
    const res = await providerFetch(url, init, o);
    const text = await readText(res, o);
    if (!res.ok) throw dashscopeHttpError(res, text, o);
    return parseJson<DashScopeTaskAnswer>(text, o);
  }

  const refOf = (ref: ProviderRef): AlibabaRef => {
    if (typeof ref.taskId !== 'string' || !ref.taskId) throw new ProviderError('Alibaba: the stored provider ref is incomplete', { retryable: false });
    return ref as unknown as AlibabaRef;
  };
  const taskUrl = (taskId: string, suffix = '') => joinUrl(base, `/api/v1/tasks/${encodeURIComponent(taskId)}${suffix}`);

  async function bodyFor(req: ProviderRequest, model: string, ctx: ProviderContext): Promise<AlibabaAnimateMixRequest> {
    const video = byRole(req.inputs, 'video');
    const image = byRole(req.inputs, 'image', 'actor_image', 'reference');
    if (!video || !image) throw new ProviderError('replace-actor needs a character image and a motion video', { retryable: false });
    const [motion, actor] = await Promise.all([conformMotionVideo(req, video, ctx, cfg.media), conformActorImage(req, image, ctx, cfg.media)]);
    return {
      model: oneOf('Alibaba', 'model', alibabaAnimateMixModelIds, model),
      input: { image_url: await ctx.inputUrl(actor.key), video_url: await ctx.inputUrl(motion.key) },
      parameters: { mode: alibabaAnimateMixMode },
    };
  }

  return {
    name: 'alibaba',
    async submit(req, ctx) {
      if (req.kind !== 'replace_actor') throw new ProviderError(`Alibaba serves only replace-actor here, not ${req.model}`, { retryable: false });
      const alt = req.route.alternates?.find((a) => a.provider === 'alibaba');
      const model = req.providerModelId ?? (req.route.provider === 'alibaba' ? req.route.providerModelId : alt?.providerModelId);
      if (!model) throw new ProviderError(`${req.model} has no Alibaba route in the catalog`, { retryable: false });
      const body = await bodyFor(req, model, ctx);
      const o = opts('video synthesis', ctx);
      const answer = await callJson(
        joinUrl(base, '/api/v1/services/aigc/image2video/video-synthesis'),
        { method: 'POST', headers: { ...headers, ...dashscopeAsyncHeader, 'content-type': 'application/json' }, body: JSON.stringify(body) },
        o,
      );
      const taskId = answer.output?.task_id;
      if (typeof taskId !== 'string' || !taskId) throw malformed(o, 'no output.task_id in the answer');
      const ref: AlibabaRef = { provider: 'alibaba', jobId: req.jobId, taskId };
      return { ...ref };
    },

    async poll(ref, ctx): Promise<PollResult> {
      const { taskId } = refOf(ref);
      const o = opts('status', ctx);
      const answer = await callJson(taskUrl(taskId), { method: 'GET', headers }, o);
      const status = answer.output?.task_status;
      switch (status) {
        case 'PENDING':
          return { state: 'queued' };
        case 'RUNNING':
        case 'SUSPENDED':
          return { state: 'running' };
        case 'SUCCEEDED': {
          const url = answer.output?.results?.video_url ?? answer.output?.video_url;
          if (typeof url !== 'string' || !/^https?:\/\//.test(url)) throw malformed(o, 'a SUCCEEDED task without a video_url');
          return { state: 'succeeded', percent: 100, outputs: [{ url, contentType: 'video/mp4' }] };
        }
        case 'FAILED': {
          const failure = taskFailure(answer);
          if (failure instanceof ProviderError) throw failure;
          return failure;
        }
        case 'CANCELED':
          return { state: 'failed', message: 'Alibaba: the task was canceled at the provider' };
        case 'UNKNOWN':
          return { state: 'failed', message: 'Alibaba: the task is unknown to the provider (expired after 24 hours, or not visible to this API key)' };
        default:
          throw malformed(o, `unknown task_status ${JSON.stringify(status ?? null)}`);
      }
    },

    // DashScope cancels PENDING tasks only; a 4xx (the task already running or finished) leaves nothing
    // to stop here: the workflow stops polling.
    async cancel(ref, ctx) {
      const { taskId } = refOf(ref);
      const o = opts('cancel', ctx);
      const res = await providerFetch(taskUrl(taskId, '/cancel'), { method: 'POST', headers }, o);
      const text = await readText(res, o);
      // Only a PENDING task can be canceled: accepted, it never runs. Any other 4xx: it ran or is gone.
      if (res.ok) return { confirmed: true };
      if (res.status >= 400 && res.status < 500 && res.status !== 401 && res.status !== 403 && res.status !== 429) return notConfirmed;
      throw dashscopeHttpError(res, text, o);
    },
  };
}

export const createAdapter: AdapterModule['createAdapter'] = (c) =>
  createAlibabaAdapter({ key: c.DASHSCOPE_API_KEY!, baseUrl: c.DASHSCOPE_BASE_URL, media: mediaToolsFrom(c) });
