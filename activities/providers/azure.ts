// Azure OpenAI (Microsoft Foundry) adapter, the second route of gpt-image-1.5 (contract and sources in
// contracts/azure.ts): POST {endpoint}/openai/deployments/{deployment}/images/generations?api-version=…
// with the `api-key` header and { model: deployment, prompt, n, size, output_format } → { data: [{ b64_json }] }. Azure
// addresses deployments, not models: AZURE_OPENAI_IMAGE_DEPLOYMENT names the gpt-image-1.5 deployment.
// The call is synchronous, so submit does the work, as on OpenAI (openai.ts): each image is decoded
// straight into our store and the ref carries only the keys. Every call is a paid generation with no
// idempotency key: the timeout follows the SDK's 600 s and a retried submit first looks for the images
// an earlier attempt already stored.
// Errors: 5xx, 408, 429 (Azure's rate and quota limits) and timeouts are retried, then fail over;
// 401/403 are our credentials (fail over at once); a content-filter refusal and any other 4xx are the
// request's (final, no failover).
import type { PollResult, ProviderAdapter, ProviderContext, ProviderOutput, ProviderRequest } from './types.js';
import { ProviderError } from './types.js';
import { errorFromResponse, malformed, parseJson, providerFetch, providerReason, readText, scrub, type HttpCallOptions } from './http.js';
import { azureContentFilterCodes, azureDefaultApiVersion, type azureImageSizes, type AzureErrorBody, type AzureImageGenerateParams, type AzureImagesResponse } from './contracts/azure.js';
import { jobOutputKey } from '../../shared/storage.js';

export interface AzureConfig {
  key: string;
  /** https://{resource}.openai.azure.com, with or without the SDK's trailing /openai. */
  endpoint: string;
  deployment: string;
  apiVersion?: string | undefined;
  /** Image generation can take minutes; default 600 s, as openai-node. */
  timeoutMs?: number;
}

export interface AzureImageRef {
  provider: 'azure';
  jobId: string;
  outputs: { key: string; contentType: string; size: number }[];
}

/** The URL of image generation on a deployment, as the SDK's AzureOpenAI client builds it. */
export function azureImagesUrl(endpoint: string, deployment: string, apiVersion: string): string {
  const base = endpoint.replace(/\/+$/, '').replace(/\/openai$/, '');
  return `${base}/openai/deployments/${encodeURIComponent(deployment)}/images/generations?api-version=${encodeURIComponent(apiVersion)}`;
}

/** The gpt-image sizes, as on OpenAI: 16:9 and 9:16 are served as 3:2 and 2:3 (the catalog's `servedAs`). */
export function azureImageSize(aspectRatio: string): (typeof azureImageSizes)[number] {
  if (aspectRatio === '16:9') return '1536x1024';
  if (aspectRatio === '9:16') return '1024x1536';
  return '1024x1024';
}

function azureErrorCodes(text: string): string[] {
  try {
    const err = (JSON.parse(text) as Partial<AzureErrorBody>).error;
    if (!err || typeof err !== 'object') return [];
    const inner = err.inner_error ?? (err as { innererror?: { code?: string } }).innererror;
    return [err.code, inner?.code].filter((c): c is string => typeof c === 'string');
  } catch {
    return [];
  }
}

/** An HTTP error answer as http.ts maps it, except a content-filter refusal, which is final whatever its status. */
export function azureHttpError(res: Response, text: string, o: HttpCallOptions): ProviderError {
  const filtered = azureErrorCodes(text).some((c) => (azureContentFilterCodes as readonly string[]).includes(c));
  if (filtered && res.status < 500) {
    const reason = scrub(providerReason(text), o.secrets);
    return new ProviderError(`${o.provider} ${o.what}: rejected by the provider's content filter (HTTP ${res.status})${reason ? `: ${reason}` : ''}`, { retryable: false, status: res.status });
  }
  return errorFromResponse(res, text, o);
}

export function createAzureAdapter(cfg: AzureConfig): ProviderAdapter {
  const timeoutMs = cfg.timeoutMs ?? 600_000;
  const url = azureImagesUrl(cfg.endpoint, cfg.deployment, cfg.apiVersion ?? azureDefaultApiVersion);
  const opts = (what: string, ctx: ProviderContext): HttpCallOptions => ({ provider: 'Azure OpenAI', what, timeoutMs, signal: ctx.signal, secrets: [cfg.key] });

  return {
    name: 'azure',
    async submit(req: ProviderRequest, ctx: ProviderContext) {
      if (req.route.kind !== 'image') {
        throw new ProviderError(`Azure OpenAI serves only image models here; ${req.model} is routed elsewhere`, { retryable: false });
      }
      const o = opts('image generation', ctx);
      const count = req.count ?? 1;
      const keys = Array.from({ length: count }, (_, i) => jobOutputKey(ctx.storage, req.jobId, i + 1, 'png'));
      // An earlier attempt that stored every image (then failed to report it) was already paid for.
      const stored = await Promise.all(keys.map((k) => ctx.storage.stat(k)));
      if (stored.every((st) => st && st.size > 0)) {
        const ref: AzureImageRef = { provider: 'azure', jobId: req.jobId, outputs: keys.map((key, i) => ({ key, contentType: 'image/png', size: stored[i]!.size })) };
        return { ...ref };
      }
      const beat = setInterval(() => ctx.heartbeat({ phase: 'azure-images' }), 10_000);
      let body: Partial<AzureImagesResponse>;
      try {
        const res = await providerFetch(
          url,
          {
            method: 'POST',
            headers: { 'api-key': cfg.key, 'content-type': 'application/json' },
            body: JSON.stringify({
              model: cfg.deployment,
              prompt: req.prompt ?? '',
              n: count,
              size: azureImageSize(req.aspectRatio ?? req.route.defaultAspectRatio),
              output_format: 'png',
            } satisfies AzureImageGenerateParams),
          },
          o,
        );
        const text = await readText(res, o);
        if (!res.ok) throw azureHttpError(res, text, o);
        body = parseJson<Partial<AzureImagesResponse>>(text, o);
      } finally {
        clearInterval(beat);
      }
      if (!Array.isArray(body.data) || body.data.length === 0) throw malformed(o, 'no images in "data"');
      const outputs: AzureImageRef['outputs'] = [];
      for (const [i, item] of (body.data as { b64_json?: unknown }[]).entries()) {
        if (i >= keys.length) break;
        const b64 = item?.b64_json;
        if (typeof b64 !== 'string' || !b64) throw malformed(o, `image ${i + 1} has no b64_json`);
        const bytes = Buffer.from(b64, 'base64');
        if (!isPng(bytes)) throw malformed(o, `image ${i + 1} is not a PNG`);
        const key = keys[i]!;
        const put = await ctx.storage.putStream(key, bytes, 'image/png', bytes.length);
        outputs.push({ key, contentType: 'image/png', size: put.size });
      }
      const ref: AzureImageRef = { provider: 'azure', jobId: req.jobId, outputs };
      return { ...ref };
    },

    async poll(ref): Promise<PollResult> {
      const outputs = (ref as unknown as Partial<AzureImageRef>).outputs;
      if (!Array.isArray(outputs)) throw new ProviderError('Azure OpenAI: the stored provider ref is incomplete', { retryable: false });
      return { state: 'succeeded', percent: 100, outputs: outputs.map((x): ProviderOutput => ({ key: x.key, contentType: x.contentType, size: x.size })) };
    },

    // Image generation completes inside submit; there is nothing left to stop.
    async cancel() {},
  };
}

function isPng(b: Buffer): boolean {
  return b.length > 8 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47;
}
