// Azure OpenAI in Microsoft Foundry: gpt-image-1.5's second route (providers/azure/adapter.ts).
import { defineProvider } from '../define.js';

export const azure = defineProvider({
  name: 'azure',
  // Azure needs the resource's endpoint as well as the key: it has no default host.
  keys: ['AZURE_OPENAI_API_KEY', 'AZURE_OPENAI_ENDPOINT'],
  publicKeys: ['AZURE_OPENAI_ENDPOINT'],
  config: ({ z, optionalString, optionalUrl }) => ({
    AZURE_OPENAI_API_KEY: optionalString.describe(
      "The Azure OpenAI resource's key: gpt-image-1.5's second route is live only with it and AZURE_OPENAI_ENDPOINT.",
    ),
    AZURE_OPENAI_ENDPOINT: optionalUrl().describe(
      "The resource endpoint https://{resource}.openai.azure.com (a trailing /openai, the SDK's base, is dropped).",
    ),
    AZURE_OPENAI_IMAGE_DEPLOYMENT: z.string().min(1).default('gpt-image-1.5').describe('The name of the gpt-image-1.5 deployment.'),
    AZURE_OPENAI_API_VERSION: z
      .string()
      .min(1)
      .default('2025-04-01-preview')
      .describe(
        "The api-version of the deployments path; `v1` or `preview` calls Microsoft's v1 API instead ({endpoint}/openai/v1/images/generations, the deployment sent as `model`).",
      ),
  }),
  // Images are answered as base64: no output host at all.
  outputHosts: { hosts: [], keyHosts: [] },
  cancel: 'never',
  // The same synchronous Images API as OpenAI's, in up to ten minutes.
  longestCallMs: 600_000,
  routes: {
    'gpt-image-1.5': {
      providerModelId: 'gpt-image-1.5',
      source:
        "Microsoft's Azure OpenAI REST reference (MicrosoftDocs/azure-ai-docs includes/api-versions/latest-inference-preview.md: POST {endpoint}/openai/deployments/{deployment-id}/images/generations?api-version=2025-04-01-preview, api-key header) and how-to dall-e.md (gpt-image-1 series sizes 1024x1024 | 1024x1536 | 1536x1024, n 1–10, b64_json, contentFilter errors); the openai SDK's AzureOpenAI client (azure.js) builds the same URL and header; the deployment is AZURE_OPENAI_IMAGE_DEPLOYMENT",
      // output_format png is sent; the sizes are answered as asked, as on OpenAI's route. The deployment
      // serves whatever model the operator deployed under its name: the adapter refuses an answer whose
      // model, size or format is not the asked one (providers/azure/adapter.ts).
      produces: {
        formats: ['png'],
        aspectRatios: ['1:1', '16:9', '9:16'],
        imageSizes: { '1:1': '1024x1024', '16:9': '1536x1024', '9:16': '1024x1536' },
        source: 'MicrosoftDocs/azure-ai-docs how-to dall-e.md (gpt-image-1 series: size 1024x1024 | 1536x1024 | 1024x1536, output_format png | jpeg | webp)',
      },
    },
  },
});
