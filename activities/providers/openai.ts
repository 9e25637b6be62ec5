// OpenAI Images adapter for gpt-image-1.5: POST {base}/v1/images/generations with
// { model, prompt, n, size, output_format } → { data: [{ b64_json }] } (GPT image models always answer
// base64). The call is synchronous, so submit does the work: it decodes each image straight into our
// store at jobs/<jobId>/output-<n>.png and the ref carries only the keys.
//
// Nothing here relies on an idempotency key (the Images API documents none): every call is a paid
// generation. So the timeout follows the SDK's 600 s (a timeout retried is an image paid twice), a
// retried submit first looks for the images an earlier attempt already stored, and a 429
// `insufficient_quota` (the account is out of credit) is final, unlike a rate-limit 429.
// The base URL is read like the SDK's OPENAI_BASE_URL, which includes `/v1`: a trailing /v1 is dropped
// so an inherited value does not yield /v1/v1/….
//
// The Videos API (sora-2, sora-2-pro) was shut down on 2026-09-24; those models route to fal (catalog.ts).
import type { PollResult, ProviderAdapter, ProviderContext, ProviderOutput, ProviderRequest } from './types.js';
import { ProviderError } from './types.js';
import { apiOrigin, joinUrl, malformed, requestJson, type HttpCallOptions } from './http.js';
import type { OpenAIImageGenerateParams, OpenAIImagesResponse } from './contracts/openai.js';
import { jobOutputKey } from '../../shared/storage.js';

export interface OpenAIConfig {
  key: string;
  baseUrl: string;
  /** Image generation can take minutes; default 600 s, as openai-node. */
  timeoutMs?: number;
}

export interface OpenAIImageRef {
  provider: 'openai';
  jobId: string;
  outputs: { key: string; contentType: string; size: number }[];
}

/** The API origin for a base URL given with or without the SDK's trailing `/v1`. */
export function openaiApiBase(baseUrl: string): string {
  return apiOrigin(baseUrl);
}

/**
 * gpt-image sizes: square, landscape 3:2 and portrait 2:3 are the documented choices, so 16:9 and 9:16
 * are served as 3:2 and 2:3 (the catalog's `servedAs` says so).
 */
export function openaiImageSize(aspectRatio: string): NonNullable<OpenAIImageGenerateParams['size']> {
  switch (aspectRatio) {
    case '16:9':
      return '1536x1024';
    case '9:16':
      return '1024x1536';
    default:
      return '1024x1024';
  }
}

export function createOpenAIAdapter(cfg: OpenAIConfig): ProviderAdapter {
  const timeoutMs = cfg.timeoutMs ?? 600_000;
  const base = openaiApiBase(cfg.baseUrl);
  const opts = (what: string, ctx: ProviderContext): HttpCallOptions => ({ provider: 'OpenAI', what, timeoutMs, signal: ctx.signal, secrets: [cfg.key] });

  return {
    name: 'openai',
    async submit(req: ProviderRequest, ctx: ProviderContext) {
      if (req.route.kind !== 'image') {
        throw new ProviderError(`OpenAI serves only image models here; ${req.model} is routed elsewhere`, { retryable: false });
      }
      const o = opts('image generation', ctx);
      const count = req.count ?? 1;
      const keys = Array.from({ length: count }, (_, i) => jobOutputKey(ctx.storage, req.jobId, i + 1, 'png'));
      // An earlier attempt that stored every image (then failed to report it) was already paid for.
      const stored = await Promise.all(keys.map((k) => ctx.storage.stat(k)));
      if (stored.every((st) => st && st.size > 0)) {
        const ref: OpenAIImageRef = { provider: 'openai', jobId: req.jobId, outputs: keys.map((key, i) => ({ key, contentType: 'image/png', size: stored[i]!.size })) };
        return { ...ref };
      }
      // Keep the activity alive while the synchronous call runs.
      const beat = setInterval(() => ctx.heartbeat({ phase: 'openai-images' }), 10_000);
      let body: Partial<OpenAIImagesResponse>;
      try {
        ({ body } = await requestJson<Partial<OpenAIImagesResponse>>(
          joinUrl(base, '/v1/images/generations'),
          {
            method: 'POST',
            headers: { authorization: `Bearer ${cfg.key}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              model: req.providerModelId ?? req.route.providerModelId,
              prompt: req.prompt ?? '',
              n: count,
              size: openaiImageSize(req.aspectRatio ?? req.route.defaultAspectRatio),
              output_format: 'png',
            } satisfies OpenAIImageGenerateParams),
          },
          o,
        ));
      } finally {
        clearInterval(beat);
      }
      if (!Array.isArray(body.data) || body.data.length === 0) throw malformed(o, 'no images in "data"');
      const outputs: OpenAIImageRef['outputs'] = [];
      for (const [i, item] of (body.data as { b64_json?: unknown }[]).entries()) {
        const b64 = item?.b64_json;
        if (typeof b64 !== 'string' || !b64) throw malformed(o, `image ${i + 1} has no b64_json`);
        const bytes = Buffer.from(b64, 'base64');
        if (!isPng(bytes)) throw malformed(o, `image ${i + 1} is not a PNG`);
        const key = keys[i]!;
        const stored = await ctx.storage.putStream(key, bytes, 'image/png', bytes.length);
        outputs.push({ key, contentType: 'image/png', size: stored.size });
      }
      const ref: OpenAIImageRef = { provider: 'openai', jobId: req.jobId, outputs };
      return { ...ref };
    },

    async poll(ref): Promise<PollResult> {
      const outputs = (ref as unknown as Partial<OpenAIImageRef>).outputs;
      if (!Array.isArray(outputs)) throw new ProviderError('OpenAI: the stored provider ref is incomplete', { retryable: false });
      return { state: 'succeeded', percent: 100, outputs: outputs.map((o): ProviderOutput => ({ key: o.key, contentType: o.contentType, size: o.size })) };
    },

    // Image generation completes inside submit; there is nothing left to stop.
    async cancel() {},
  };
}

function isPng(b: Buffer): boolean {
  return b.length > 8 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47;
}
