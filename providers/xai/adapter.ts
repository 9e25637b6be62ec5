// xAI video adapter (docs.x.ai, Video Generation — a deferred request): POST {base}/v1/videos/generations
// with { model, prompt, duration, aspect_ratio, resolution, image? } → { request_id }; GET
// {base}/v1/videos/{request_id} → 202 (with or without a body) while pending, then 200 with
// { status: "done", video: { url, duration, respect_moderation } } or { status: "failed", error: { code,
// message } } (providers/xai/contract.ts). grok-video is served by fal first (catalog.ts); this is its alternate
// route when only XAI_API_KEY is configured. xAI documents no cancel endpoint for deferred requests.
// XAI_BASE_URL may carry the `/v1` of xAI's SDK base URL (https://api.x.ai/v1): it is dropped, as for
// OpenAI, so paths are never /v1/v1/….
import type { PollResult, ProviderAdapter, ProviderContext, ProviderRef } from '../../activities/providers/types.js';
import { notConfirmed, ProviderError } from '../../activities/providers/types.js';
import type { AdapterModule } from '../../activities/providers/adapter-module.js';
import { apiOrigin, defaultTimeoutMs, joinUrl, malformed, parseJson, providerFetch, readText, type HttpCallOptions } from '../../activities/providers/http.js';
import { classify, errorOfRow } from '../../activities/providers/error-table.js';
import { xaiErrors, xaiFacts } from './errors.js';
import { xaiVideoAspectRatios, xaiVideoResolutions, type XaiDeferredVideoResponse, type XaiVideoGenerationRequest } from './contract.js';
import { exact, oneOf } from '../../activities/providers/body-check.js';

interface XaiConfig {
  key: string;
  baseUrl: string;
  timeoutMs?: number;
}

interface XaiRef {
  provider: 'xai';
  jobId: string;
  requestId: string;
}

/** An HTTP error answer classed by xAI's status table (providers/xai/errors.ts). */
function xaiHttpError(res: Response, text: string, o: HttpCallOptions, call: 'submit' | 'check'): ProviderError {
  const facts = xaiFacts(res, text, call);
  return errorOfRow(classify(xaiErrors, facts), facts, o);
}

export function createXaiAdapter(cfg: XaiConfig): ProviderAdapter {
  const timeoutMs = cfg.timeoutMs ?? defaultTimeoutMs;
  const base = apiOrigin(cfg.baseUrl);
  const headers = { authorization: `Bearer ${cfg.key}`, accept: 'application/json' };
  const opts = (what: string, ctx: ProviderContext): HttpCallOptions => ({ provider: 'xAI', what, timeoutMs, signal: ctx.signal, secrets: [cfg.key] });

  async function submitJson(url: string, init: RequestInit, o: HttpCallOptions): Promise<Record<string, unknown>> {
    const res = await providerFetch(url, init, o);
    const text = await readText(res, o);
    if (!res.ok) throw xaiHttpError(res, text, o, 'submit');
    return parseJson<Record<string, unknown>>(text, o);
  }

  const refOf = (ref: ProviderRef): XaiRef => {
    if (typeof ref.requestId !== 'string') throw new ProviderError('xAI: the stored provider ref is incomplete', { retryable: false });
    return ref as unknown as XaiRef;
  };

  return {
    name: 'xai',
    async submit(req, ctx) {
      if (req.route.kind !== 'video') throw new ProviderError(`xAI serves only video models here, not ${req.model}`, { retryable: false });
      const alt = req.route.alternates?.find((a) => a.provider === 'xai');
      // The id stored at create time; jobs from before then work it out from the catalog.
      const model = req.providerModelId ?? (req.route.provider === 'xai' ? req.route.providerModelId : alt?.providerModelId);
      if (!model) throw new ProviderError(`${req.model} has no xAI route in the catalog`, { retryable: false });
      const [image] = req.inputs.filter((i) => i.role === 'start_frame' || i.role === 'image' || i.role === 'reference');
      const o = opts('video generation', ctx);
      const body = await submitJson(
        joinUrl(base, '/v1/videos/generations'),
        {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify(
            exact<XaiVideoGenerationRequest>()({
              model,
              prompt: req.prompt ?? '',
              duration: req.duration ?? req.route.defaultDuration,
              aspect_ratio: oneOf('xAI', 'aspect_ratio', xaiVideoAspectRatios, req.aspectRatio ?? req.route.defaultAspectRatio),
              resolution: oneOf('xAI', 'resolution', xaiVideoResolutions, req.resolution ?? req.route.defaultResolution),
              ...(image ? { image: { url: await ctx.inputUrl(image.key) } } : {}),
            }),
          ),
        },
        o,
      );
      if (typeof body.request_id !== 'string' || !body.request_id) throw malformed(o, 'no request_id in the answer');
      const ref: XaiRef = { provider: 'xai', jobId: req.jobId, requestId: body.request_id };
      return { ...ref };
    },

    async poll(ref, ctx): Promise<PollResult> {
      const { requestId } = refOf(ref);
      const o = opts('status', ctx);
      const res = await providerFetch(joinUrl(base, `/v1/videos/${encodeURIComponent(requestId)}`), { method: 'GET', headers }, o);
      const text = await readText(res, o);
      if (!res.ok) throw xaiHttpError(res, text, o, 'check');
      // 202: still pending, with or without a JSON body (which may carry progress).
      if (res.status === 202) {
        const pending = text.trim() ? tryParse(text) : undefined;
        return { state: 'running', percent: percentOf(pending?.progress) };
      }
      const body = parseJson<Partial<XaiDeferredVideoResponse>>(text, o);
      // A 200 with a video and no `status` is a finished request (xAI's earlier answers carried only
      // { video, model }): read as done, never as a failure of a request that was paid for.
      const status = body.status ?? (body.video ? 'done' : undefined);
      switch (status) {
        case 'pending':
          return { state: 'running', percent: percentOf(body.progress) };
        case 'done': {
          const video = body.video;
          if (video?.respect_moderation === false)
            return { state: 'failed', message: "xAI: the generated video was rejected by the provider's content moderation" };
          if (typeof video?.url !== 'string' || !/^https?:\/\//.test(video.url)) throw malformed(o, 'a done request without a video url');
          return { state: 'succeeded', percent: 100, outputs: [{ url: video.url, contentType: 'video/mp4' }] };
        }
        case 'expired':
          return { state: 'failed', message: 'xAI: the request expired before it completed' };
        case 'failed': {
          const err = body.error as { code?: unknown; message?: unknown } | string | undefined;
          const reason =
            typeof err === 'string'
              ? err
              : typeof err?.message === 'string'
                ? `${err.message}${typeof err.code === 'string' ? ` (${err.code})` : ''}`
                : undefined;
          return { state: 'failed', message: `xAI: generation failed${reason ? `: ${reason}` : ''}` };
        }
        default:
          // A status this adapter does not know (a new one of xAI's, or none at all) does not end a
          // paid request as failed: it is polled on as still running until a known status answers or
          // the job's deadline ends the wait (providers/xai/contract.ts lists pending, done, failed, expired).
          return { state: 'running', percent: percentOf(body.progress) };
      }
    },

    // No documented cancel for deferred requests: the workflow stops polling and the result expires.
    async cancel() {
      return notConfirmed;
    },
  };
}

function tryParse(text: string): Partial<XaiDeferredVideoResponse> | undefined {
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' ? (v as Partial<XaiDeferredVideoResponse>) : undefined;
  } catch {
    return undefined;
  }
}

function percentOf(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? Math.min(100, Math.max(0, v)) : undefined;
}

export const createAdapter: AdapterModule['createAdapter'] = (c) => createXaiAdapter({ key: c.XAI_API_KEY!, baseUrl: c.XAI_BASE_URL });

/** The route prober's lookup of a model (./probe.ts). */
export { modelLookup } from './probe.js';
