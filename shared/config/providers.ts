// The provider-specific variables: each provider's key, base URL and options. A route is live only
// when its provider's key is present and PROVIDERS_MODE is not "local". Provider base URLs are
// configurable so a proxy or gateway can sit in between; the defaults are the providers' public APIs.
import { z } from 'zod';
import { bool, optionalString } from './env-types.js';

const key = (provider: string) => optionalString.meta({ valueType: 'string (secret)' }).describe(`${provider} API key. Set: the provider's routes can be live.`);
const baseUrl = (fallback: string, note = '') =>
  z
    .url()
    .default(fallback)
    .meta({ valueType: 'URL' })
    .describe(`Base URL of the provider's API (a proxy may sit in between).${note}`);

export const providersEnv = {
  FAL_KEY: key('fal.ai'),
  FAL_QUEUE_URL: baseUrl('https://queue.fal.run', " fal's queue API."),
  // Accounts whose fal CDN serves outputs only with the key (the key goes to fal's CDN hosts only).
  FAL_CDN_REQUIRES_KEY: bool(false).describe("The account's fal CDN serves outputs only with the key (the key goes to fal's CDN hosts only)."),
  OPENAI_API_KEY: key('OpenAI'),
  OPENAI_BASE_URL: baseUrl('https://api.openai.com'),
  ELEVENLABS_API_KEY: key('ElevenLabs'),
  ELEVENLABS_BASE_URL: baseUrl('https://api.elevenlabs.io'),
  XAI_API_KEY: key('xAI'),
  XAI_BASE_URL: baseUrl('https://api.x.ai'),
  // Google's Gemini API (Veo 3.1, veo-3.1's second route). A trailing /v1beta (the SDKs' base) is dropped.
  GEMINI_API_KEY: key("Google's Gemini API (Veo 3.1, veo-3.1's second route)"),
  GEMINI_BASE_URL: baseUrl('https://generativelanguage.googleapis.com', ' A trailing /v1beta (the SDKs\' base) is dropped.'),
  // BytePlus ModelArk (Seedream 4.5 and Seedance 1.5 pro, the second route of seedream-4.5 and
  // seedance-1.5). A trailing /api/v3 (the SDK's base) is dropped. The model variables replace the
  // catalog's model ids (an Ark Endpoint ID "ep-…" works too).
  ARK_API_KEY: key('BytePlus ModelArk (Seedream 4.5 and Seedance 1.5 pro, the second route of seedream-4.5 and seedance-1.5)'),
  ARK_BASE_URL: baseUrl('https://ark.ap-southeast.bytepluses.com', " A trailing /api/v3 (the SDK's base) is dropped."),
  ARK_SEEDREAM_MODEL: optionalString.describe("Replaces the catalog's Seedream model id (an Ark Endpoint ID `ep-…` works too)."),
  ARK_SEEDANCE_MODEL: optionalString.describe("Replaces the catalog's Seedance model id (an Ark Endpoint ID `ep-…` works too)."),
  // Alibaba Cloud Model Studio (DashScope; Wan 2.2 Animate Mix, replace-actor's second route). The
  // Singapore (international) endpoint by default; a trailing /api/v1 (the SDK's base) is dropped.
  DASHSCOPE_API_KEY: key("Alibaba Cloud Model Studio (DashScope; Wan 2.2 Animate Mix, replace-actor's second route)"),
  DASHSCOPE_BASE_URL: baseUrl('https://dashscope-intl.aliyuncs.com', " The Singapore (international) endpoint by default; a trailing /api/v1 (the SDK's base) is dropped."),
  // Azure OpenAI in Microsoft Foundry (gpt-image-1.5's second route): the resource endpoint
  // https://{resource}.openai.azure.com (a trailing /openai, the SDK's base, is dropped), the name of the
  // gpt-image-1.5 deployment, and the api-version of the deployments path. Live only with key and endpoint.
  AZURE_OPENAI_API_KEY: key("Azure OpenAI in Microsoft Foundry (gpt-image-1.5's second route; live only with AZURE_OPENAI_ENDPOINT too)"),
  AZURE_OPENAI_ENDPOINT: optionalString
    .pipe(z.url().optional())
    .meta({ valueType: 'URL' })
    .describe("The resource endpoint `https://{resource}.openai.azure.com` (a trailing /openai, the SDK's base, is dropped). No default: it is your resource's own."),
  AZURE_OPENAI_IMAGE_DEPLOYMENT: z.string().min(1).default('gpt-image-1.5').meta({ valueType: 'string' }).describe('The name of the gpt-image-1.5 deployment.'),
  AZURE_OPENAI_API_VERSION: z.string().min(1).default('2025-04-01-preview').meta({ valueType: 'string' }).describe('The api-version of the deployments path.'),
};
