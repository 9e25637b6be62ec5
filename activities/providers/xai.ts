// xAI video adapter (docs.x.ai, Video Generation — a deferred request): POST {base}/v1/videos/generations
// with { model, prompt, duration, aspect_ratio, resolution, image? } → { request_id }; GET
// {base}/v1/videos/{request_id} → { status: "pending" | "done" | "expired" | "failed", video: { url,
// duration, respect_moderation } }. grok-video is served by fal first (catalog.ts); this is its alternate
// route when only XAI_API_KEY is configured. xAI documents no cancel endpoint for deferred requests.
import type { PollResult, ProviderAdapter, ProviderContext, ProviderRef } from './types.js';
import { ProviderError } from './types.js';
import { defaultTimeoutMs, joinUrl, malformed, requestJson, type HttpCallOptions } from './http.js';

export interface XaiConfig {
  key: string;
  baseUrl: string;
  timeoutMs?: number;
}

export interface XaiRef {
  provider: 'xai';
  jobId: string;
  requestId: string;
}

export function createXaiAdapter(cfg: XaiConfig): ProviderAdapter {
  const timeoutMs = cfg.timeoutMs ?? defaultTimeoutMs;
  const headers = { authorization: `Bearer ${cfg.key}`, accept: 'application/json' };
  const opts = (what: string, ctx: ProviderContext): HttpCallOptions => ({ provider: 'xAI', what, timeoutMs, signal: ctx.signal, secrets: [cfg.key] });

  const refOf = (ref: ProviderRef): XaiRef => {
    if (typeof ref.requestId !== 'string') throw new ProviderError('xAI: the stored provider ref is incomplete', { retryable: false });
    return ref as unknown as XaiRef;
  };

  return {
    name: 'xai',
    async submit(req, ctx) {
      if (req.route.kind !== 'video') throw new ProviderError(`xAI serves only video models here, not ${req.model}`, { retryable: false });
      const alt = req.route.alternates?.find((a) => a.provider === 'xai');
      const model = req.route.provider === 'xai' ? req.route.providerModelId : alt?.providerModelId;
      if (!model) throw new ProviderError(`${req.model} has no xAI route in the catalog`, { retryable: false });
      const [image] = req.inputs.filter((i) => i.role === 'start_frame' || i.role === 'image' || i.role === 'reference');
      const o = opts('video generation', ctx);
      const { body } = await requestJson<Record<string, unknown>>(
        joinUrl(cfg.baseUrl, '/v1/videos/generations'),
        {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({
            model,
            prompt: req.prompt,
            duration: req.duration ?? req.route.defaultDuration,
            aspect_ratio: req.aspectRatio ?? req.route.defaultAspectRatio,
            resolution: req.resolution ?? req.route.defaultResolution,
            ...(image ? { image: { url: await ctx.inputUrl(image.key) } } : {}),
          }),
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
      const { body } = await requestJson<Record<string, unknown>>(joinUrl(cfg.baseUrl, `/v1/videos/${encodeURIComponent(requestId)}`), { method: 'GET', headers }, o);
      switch (body.status) {
        case 'pending':
          return { state: 'running', percent: typeof body.progress === 'number' ? body.progress : undefined };
        case 'done': {
          const video = body.video as { url?: unknown; respect_moderation?: unknown } | undefined;
          if (video?.respect_moderation === false) return { state: 'failed', message: "xAI: the generated video was rejected by the provider's content moderation" };
          if (typeof video?.url !== 'string' || !/^https?:\/\//.test(video.url)) throw malformed(o, 'a done request without a video url');
          return { state: 'succeeded', percent: 100, outputs: [{ url: video.url, contentType: 'video/mp4' }] };
        }
        case 'expired':
          return { state: 'failed', message: 'xAI: the request expired before it completed' };
        case 'failed': {
          const reason = typeof body.error === 'string' ? body.error : (body.error as { message?: string } | undefined)?.message;
          return { state: 'failed', message: `xAI: generation failed${reason ? `: ${reason}` : ''}` };
        }
        default:
          throw malformed(o, `unknown status ${JSON.stringify(body.status ?? null)}`);
      }
    },

    // No documented cancel for deferred requests: the workflow stops polling and the result expires.
    async cancel() {},
  };
}
