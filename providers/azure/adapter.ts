// Azure OpenAI (Microsoft Foundry) adapter, the second route of gpt-image-1.5 (contract and sources in
// providers/azure/contract.ts): POST {endpoint}/openai/deployments/{deployment}/images/generations?api-version=…
// with the `api-key` header and { model: deployment, prompt, n, size, output_format } → { data: [{ b64_json }] }. Azure
// addresses deployments, not models: AZURE_OPENAI_IMAGE_DEPLOYMENT names the gpt-image-1.5 deployment.
// AZURE_OPENAI_API_VERSION `v1` or `preview` selects Microsoft's v1 API instead: POST
// {endpoint}/openai/v1/images/generations (with ?api-version=preview for `preview`), the same body, the
// deployment named only by `model`; Microsoft documents image generation there as a preview operation.
// The request, the answer and the rest are those of every host of OpenAI's Images API (images-api.ts,
// which also says why a retried submit never pays twice).
// Errors (providers/azure/errors.ts): 5xx, 408, 429 (Azure's rate and quota limits) and timeouts are retried,
// then fail over; 401/403 are our credentials and a missing deployment the route (fail over at once);
// a content-filter refusal and any other 4xx are the request's (final, no failover).
import type { ProviderAdapter } from '../../activities/providers/types.js';
import type { ProviderError } from '../../activities/providers/types.js';
import type { AdapterModule } from '../../activities/providers/adapter-module.js';
import type { HttpCallOptions } from '../../activities/providers/http.js';
import { classify, errorOfRow } from '../../activities/providers/error-table.js';
import { azureErrors, azureFacts } from './errors.js';
import { createImagesApiAdapter } from '../../activities/providers/images-api.js';
import { azureDefaultApiVersion, azureV1ApiVersions, type azureImageSizes, type AzureImageGenerateParams } from './contract.js';

interface AzureConfig {
  key: string;
  /** https://{resource}.openai.azure.com, with or without the SDK's trailing /openai. */
  endpoint: string;
  deployment: string;
  apiVersion?: string | undefined;
  /** Image generation can take minutes; default 600 s, as openai-node. */
  timeoutMs?: number;
}

/**
 * The URL of image generation: on a deployment with a dated api-version, as the SDK's AzureOpenAI client
 * builds it; or, for `v1` / `preview`, on Microsoft's v1 API, where `api-version` is optional (`v1` when
 * absent) and the body's `model` names the deployment.
 */
export function azureImagesUrl(endpoint: string, deployment: string, apiVersion: string): string {
  const base = endpoint.replace(/\/+$/, '').replace(/\/openai(\/v1)?$/, '');
  if ((azureV1ApiVersions as readonly string[]).includes(apiVersion))
    return `${base}/openai/v1/images/generations${apiVersion === 'v1' ? '' : `?api-version=${apiVersion}`}`;
  return `${base}/openai/deployments/${encodeURIComponent(deployment)}/images/generations?api-version=${encodeURIComponent(apiVersion)}`;
}

/** An HTTP error answer classed by Azure's table (providers/azure/errors.ts): a content-filter refusal is final whatever its status. */
function azureHttpError(res: Response, text: string, o: HttpCallOptions): ProviderError {
  const facts = azureFacts(res, text);
  return errorOfRow(classify(azureErrors, facts), facts, o);
}

export function createAzureAdapter(cfg: AzureConfig): ProviderAdapter {
  return createImagesApiAdapter({
    name: 'azure',
    label: 'Azure OpenAI',
    key: cfg.key,
    timeoutMs: cfg.timeoutMs,
    url: azureImagesUrl(cfg.endpoint, cfg.deployment, cfg.apiVersion ?? azureDefaultApiVersion),
    headers: { 'api-key': cfg.key },
    // The deployment serves the route's model (gpt-image-1.5) under the operator's name: its row applies.
    modelOf: (req) => req.providerModelId ?? req.route.providerModelId,
    body: (req, count, ask) =>
      ({
        model: cfg.deployment,
        prompt: req.prompt ?? '',
        n: count,
        size: ask.size as (typeof azureImageSizes)[number],
        output_format: ask.outputFormat,
      }) satisfies AzureImageGenerateParams,
    httpError: azureHttpError,
  });
}

export const createAdapter: AdapterModule['createAdapter'] = (c) =>
  createAzureAdapter({
    key: c.AZURE_OPENAI_API_KEY!,
    endpoint: c.AZURE_OPENAI_ENDPOINT!,
    deployment: c.AZURE_OPENAI_IMAGE_DEPLOYMENT ?? 'gpt-image-1.5',
    apiVersion: c.AZURE_OPENAI_API_VERSION,
  });
