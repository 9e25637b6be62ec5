// OpenAI Images adapter for gpt-image-1.5 and gpt-image-2: POST {base}/v1/images/generations with Bearer auth, the
// request and answer as every host of OpenAI's Images API has them (images-api.ts, which also says why a
// retried submit never pays twice). Errors are classed by OpenAI's error codes (providers/openai/errors.ts): a
// 429 `insufficient_quota` (the account is out of credit) is our account's, unlike a rate-limit 429. The base URL is read like the SDK's OPENAI_BASE_URL,
// which includes `/v1`: a trailing /v1 is dropped so an inherited value does not yield /v1/v1/….
//
// The Videos API (sora-2, sora-2-pro) was shut down on 2026-09-24; those models route to fal (catalog.ts).
import type { ProviderAdapter } from '../../activities/providers/types.js';
import type { AdapterModule } from '../../activities/providers/adapter-module.js';
import { apiOrigin, joinUrl, type HttpCallOptions } from '../../activities/providers/http.js';
import type { ProviderError } from '../../activities/providers/types.js';
import { classify, errorOfRow } from '../../activities/providers/error-table.js';
import { openaiErrors, openaiFacts } from './errors.js';
import { createImagesApiAdapter } from '../../activities/providers/images-api.js';
import { gptImageAsk } from '../../activities/providers/gpt-image-models.js';
import type { OpenAIImageGenerateParams } from './contract.js';

export { gptImage2Sizes } from '../../activities/providers/gpt-image-models.js';

/** The `size` sent for a model at an aspect ratio: its row of gpt-image-models.ts (undefined for a model without one). */
export function openaiImageSize(model: string, aspectRatio: string): string | undefined {
  return gptImageAsk(model, aspectRatio)?.size;
}

interface OpenAIConfig {
  key: string;
  baseUrl: string;
  /** Image generation can take minutes; default 600 s, as openai-node. */
  timeoutMs?: number;
}

/** The API origin for a base URL given with or without the SDK's trailing `/v1`. */
function openaiApiBase(baseUrl: string): string {
  return apiOrigin(baseUrl);
}

/** An HTTP error answer classed by OpenAI's error codes (providers/openai/errors.ts). */
function openaiHttpError(res: Response, text: string, o: HttpCallOptions): ProviderError {
  const facts = openaiFacts(res, text);
  return errorOfRow(classify(openaiErrors, facts), facts, o);
}

export function createOpenAIAdapter(cfg: OpenAIConfig): ProviderAdapter {
  return createImagesApiAdapter({
    name: 'openai',
    label: 'OpenAI',
    key: cfg.key,
    timeoutMs: cfg.timeoutMs,
    url: joinUrl(openaiApiBase(cfg.baseUrl), '/v1/images/generations'),
    headers: { authorization: `Bearer ${cfg.key}` },
    modelOf: (req) => req.providerModelId ?? req.route.providerModelId,
    body: (req, count, ask) =>
      ({
        model: ask.model,
        prompt: req.prompt ?? '',
        n: count,
        size: ask.size,
        output_format: ask.outputFormat,
      }) satisfies OpenAIImageGenerateParams,
    httpError: openaiHttpError,
  });
}

export const createAdapter: AdapterModule['createAdapter'] = (c) => createOpenAIAdapter({ key: c.OPENAI_API_KEY!, baseUrl: c.OPENAI_BASE_URL });

/** The route prober's lookup of a model (./probe.ts). */
export { modelLookup } from './probe.js';
