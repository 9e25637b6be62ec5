// Azure OpenAI in Microsoft Foundry: image generation on a gpt-image-1.5 deployment, the second route of
// gpt-image-1.5. What was confirmed, and from what:
//  - Wire: POST {endpoint}/openai/deployments/{deployment-id}/images/generations?api-version={version},
//    header `api-key`, JSON body. Microsoft's REST reference (MicrosoftDocs/azure-ai-docs,
//    articles/foundry/openai/includes/api-versions/latest-inference-preview.md, "Image generations -
//    Create", api-version 2025-04-01-preview) and the `openai` npm package's own AzureOpenAI client
//    (openai 7.57.0, azure.js): baseURL `${endpoint}/openai`, `/deployments/${model}` inserted before
//    `/images/generations`, `api-version` as a default query parameter, `api-key` header for a key.
//    Microsoft's image pages (how-to articles/foundry/openai/how-to/dall-e.md, dated 2025-11-21; REST
//    quickstart includes/dall-e-rest.md; Python quickstart includes/dall-e-python.md, 2026-01-29) still
//    give this path with api-version 2025-04-01-preview, so it stays the default.
//  - v1 API (AZURE_OPENAI_API_VERSION `v1` or `preview`): Microsoft's "v1 API" page
//    (articles/foundry/openai/includes/api-version-lifecycle-content.md, 2026-03-19): base
//    {endpoint}/openai/v1/, `api-key` header, the deployment name as `model`, "api-version is no longer
//    a required parameter with the v1 GA API". Its v1 preview REST reference
//    (includes/api-versions/new-inference-preview.md, "Createimage"): POST
//    {endpoint}/openai/v1/images/generations?api-version=preview, api-version optional ("v1 if not
//    otherwise specified", values v1 | preview), body `model` "the model deployment to use" (required),
//    prompt, n, size, quality, output_format, output_compression, background, user; answer
//    AzureImagesResponse. Image generation is listed there, in the preview reference, and not in the
//    v1 GA status table, hence opt-in.
//  - Body: prompt, n (1–10), size (gpt-image-1 series: 1024x1024 | 1024x1536 | 1536x1024, how-to
//    "Size"), quality, output_format png | jpeg (WEBP is not supported on Azure, how-to "Output
//    format"), output_compression, background, user, and `model`: the reference's body table omits it
//    (the deployment in the path names it), but the SDK's AzureOpenAI client sends images.generate's
//    `model` unchanged (it is also what it puts in the path) and the how-to says to set it to the
//    deployment name, so the deployment name is sent as `model`, as the SDK does. GPT image models always answer base64
//    (`response_format` is not supported for them).
//  - Prompt length: the reference says 32000 characters for the gpt-image-1 series; Microsoft's model
//    list (includes/models-azure-direct-openai.md, image generation models) says a 4,000-character
//    max request. The smaller bound is the contract here; our create schema caps prompts at 4000, so no
//    job this route could receive exceeds it.
//  - Answer: `generateImagesResponse` { created, data: [{ b64_json }], usage }.
//  - Errors: `dalleErrorResponse` { error: { code, message, param, type, inner_error: { code:
//    ResponsibleAIPolicyViolation, content_filter_results, revised_prompt } } }; the how-to's
//    troubleshooting gives `error.code` "contentFilter" for a flagged prompt or a filtered generated
//    image, 429 for a rate limit (wait, or ask for more quota), 401 for a wrong key.
// The body's fields are a subset of the SDK's ImageGenerateParamsNonStreaming: activities/providers/sdk-types.ts checks it.
import { z } from 'zod';

export const azureImageSizes = ['1024x1024', '1536x1024', '1024x1536'] as const;
/** The api-version of Microsoft's REST reference for image generation on a deployment. */
export const azureDefaultApiVersion = '2025-04-01-preview';
/** The api-version values of Microsoft's v1 API (AzureAIFoundryModelsApiVersion): they select the v1 path. */
export const azureV1ApiVersions = ['v1', 'preview'] as const;
const azurePromptMaxChars = 4000;

export const azureImageGenerateParams = z.strictObject({
  prompt: z.string().min(1).max(azurePromptMaxChars),
  /** The deployment name, as the SDK sends it. */
  model: z.string().min(1).optional(),
  n: z.number().int().min(1).max(10).optional(),
  size: z.enum(azureImageSizes).optional(),
  quality: z.enum(['low', 'medium', 'high', 'auto']).optional(),
  output_format: z.enum(['png', 'jpeg']).optional(),
  output_compression: z.number().int().min(0).max(100).optional(),
  background: z.enum(['transparent', 'opaque', 'auto']).optional(),
  user: z.string().optional(),
});

export type AzureImageGenerateParams = z.input<typeof azureImageGenerateParams>;

/**
 * Error codes that mean the content filter refused the prompt or the image (final: no other route fixes
 * that). contentFilter and ResponsibleAIPolicyViolation are the image docs' own; content_filter and
 * content_policy_violation are what Azure names the same refusal on its other operations, read the same way.
 */
export const azureContentFilterCodes = ['contentFilter', 'content_filter', 'content_policy_violation', 'ResponsibleAIPolicyViolation'] as const;
