// OpenAI Images adapter for gpt-image-1.5 and gpt-image-2: POST {base}/v1/images/generations with Bearer auth, the
// request and answer as every host of OpenAI's Images API has them (images-api.ts, which also says why a
// retried submit never pays twice). Errors are classed by OpenAI's error codes (errors/openai.ts): a
// 429 `insufficient_quota` (the account is out of credit) is our account's, unlike a rate-limit 429. The base URL is read like the SDK's OPENAI_BASE_URL,
// which includes `/v1`: a trailing /v1 is dropped so an inherited value does not yield /v1/v1/….
//
// The Videos API (sora-2, sora-2-pro) was shut down on 2026-09-24; those models route to fal (catalog.ts).
import type { ProviderAdapter } from './types.js';
import type { AdapterModule } from './adapter-module.js';
import { apiOrigin, joinUrl, type HttpCallOptions } from './http.js';
import type { ProviderError } from './types.js';
import { classify, errorOfRow } from './error-table.js';
import { openaiErrors, openaiFacts } from './errors/openai.js';
import { createImagesApiAdapter, gptImageSize, type ImagesApiRef } from './images-api.js';
import type { OpenAIImageGenerateParams } from './contracts/openai.js';

/**
 * gpt-image-2 takes any WIDTHxHEIGHT within its limits (contracts/openai.ts gptImage2SizeProblem), so
 * each aspect ratio gets its own exact size: the largest OpenAI does not call experimental (at most
 * 2560x1440, and the square with the same pixel count).
 */
export const gptImage2Sizes: Readonly<Record<string, string>> = { '1:1': '1920x1920', '16:9': '2560x1440', '9:16': '1440x2560' };

/**
 * The models openai-node's `size` documentation gives arbitrary WIDTHxHEIGHT sizes: gpt-image-2 and
 * gpt-image-2.5-sunburst / -flare, with their dated snapshots. gpt-image-2.6-* is not among them, so it
 * gets the three standard sizes "supported by the GPT image models".
 */
export const arbitrarySizeModel = (model: string) => /^gpt-image-2(-\d{4}-\d{2}-\d{2}|\.5-(sunburst|flare)(-\d{4}-\d{2}-\d{2})?)?$/.test(model);

/** The `size` sent for a model: gpt-image-2's exact size per ratio where arbitrary sizes are documented, else the three fixed gpt-image sizes. */
export function openaiImageSize(model: string, aspectRatio: string): string {
  if (arbitrarySizeModel(model)) return gptImage2Sizes[aspectRatio] ?? gptImage2Sizes['1:1']!;
  return gptImageSize(aspectRatio);
}

export interface OpenAIConfig {
  key: string;
  baseUrl: string;
  /** Image generation can take minutes; default 600 s, as openai-node. */
  timeoutMs?: number;
}

export type OpenAIImageRef = ImagesApiRef<'openai'>;

/** The API origin for a base URL given with or without the SDK's trailing `/v1`. */
export function openaiApiBase(baseUrl: string): string {
  return apiOrigin(baseUrl);
}

/** An HTTP error answer classed by OpenAI's error codes (errors/openai.ts). */
export function openaiHttpError(res: Response, text: string, o: HttpCallOptions): ProviderError {
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
    body: (req, count) => {
      const model = req.providerModelId ?? req.route.providerModelId;
      return {
        model,
        prompt: req.prompt ?? '',
        n: count,
        size: openaiImageSize(model, req.aspectRatio ?? req.route.defaultAspectRatio),
        output_format: 'png',
      } satisfies OpenAIImageGenerateParams;
    },
    httpError: openaiHttpError,
  });
}

export const createAdapter: AdapterModule['createAdapter'] = (c) => createOpenAIAdapter({ key: c.OPENAI_API_KEY!, baseUrl: c.OPENAI_BASE_URL });
