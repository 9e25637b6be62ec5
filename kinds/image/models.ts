// The catalog's image models (shared/catalog.ts has the rules). Values follow each provider's
// documentation; the `source` of each entry says where. Second routes: providers/<name>/descriptor.ts `routes`.
import type { ModelEntry } from '../../shared/catalog/types.js';

const imageRatios = ['1:1', '9:16', '16:9'] as const;

/** Every image model's catalog entry: the kinds' models list (kinds/models.ts) reads it. */
export const entries = {
  'nano-banana-2': {
    model: 'nano-banana-2',
    kind: 'image',
    provider: 'fal',
    providerModelId: 'fal-ai/nano-banana-2',
    falRequest: 'nano-banana',
    // fal's input types of both endpoints (the pinned @fal-ai/client) have `seed`.
    controls: ['seed'],
    secondaryModelIds: { edit: 'fal-ai/nano-banana-2/edit' },
    // fal.ai/models/fal-ai/nano-banana-2 (queue API): prompt, num_images, aspect_ratio (auto, 21:9 … 9:16),
    // resolution 0.5K | 1K | 2K | 4K, output_format jpeg | png | webp; /edit adds image_urls.
    otherRoutes:
      "Google's Gemini API names Nano Banana 2 gemini-3.1-flash-image (GA 2026-05-28; the -preview id shut down 2026-06-25), per ai.google.dev/gemini-api/docs/changelog and /deprecations. Its changelog entry of 2026-10-06 deprecates gemini-3.1-flash-image in favour of gemini-nano-banana-2.1 (Nano Banana 2.1, a newer model, not this one) without a shutdown date; third-party gateway notes (LiteLLM) give a shutdown on 2026-10-29 that no Google page read confirms or denies. Whether the Gemini API still serves gemini-3.1-flash-image is unconfirmed, so no alternate.",
    source: 'fal.ai model page fal-ai/nano-banana-2 (prompt, num_images, aspect_ratio, output_format; /edit: image_urls)',
    takes: {
      // fal's input schema for fal-ai/nano-banana-2 and /edit: prompt minLength 3.
      promptChars: { min: 3 },
    },
    // output_format "png" is sent; fal's page gives no pixel size per aspect ratio at resolution 1K.
    produces: { formats: ['png'], aspectRatios: imageRatios, source: 'fal.ai model page fal-ai/nano-banana-2 (output_format png, aspect_ratio)' },
    aspectRatios: imageRatios,
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    price: { per: 'image', credits: 4, providerCost: 3 },
    // Low-priority jobs fill slots that would idle: a quarter off, out of our margin (fal bills the
    // same request the same), never below the provider cost (shared/catalog.ts priceAt).
    lowPriorityDiscount: 0.25,
  },
  'gpt-image-1.5': {
    model: 'gpt-image-1.5',
    kind: 'image',
    provider: 'openai',
    providerModelId: 'gpt-image-1.5',
    // OpenAI's deprecations page (developers.openai.com/api/docs/deprecations, read 2026-12-02) lists
    // gpt-image-1.5 and gpt-image-1.5-2025-12-16 as deprecated on 2026-06-02 (the notice date) with
    // shutdown on 2026-12-01, recommending gpt-image-2.6-sunburst or gpt-image-2.6-flare (both
    // ImageModel names in the pinned openai-node, resources/images.d.ts). Customers are sent to
    // gpt-image-2.6-sunburst, the first of the two (gpt-image-2.6-flare is served too); the route probe reads the same date as the model's `shutdown_date` (docs/operations/runbook.md).
    deprecation: {
      since: '2026-06-02',
      reason:
        'OpenAI shuts gpt-image-1.5 down on 2026-12-01 and recommends gpt-image-2.6-sunburst or gpt-image-2.6-flare (developers.openai.com/api/docs/deprecations)',
      replacement: 'gpt-image-2.6-sunburst',
      retiresAt: '2026-12-01',
    },
    // developers.openai.com/api/reference/resources/images/methods/generate: gpt-image-1.5 is listed as live;
    // sizes 1024x1024 | 1536x1024 | 1024x1536 | auto, n 1–10, GPT image models always answer b64_json.
    // Azure OpenAI in Microsoft Foundry serves it too (providers/azure/adapter.ts, providers/azure/contract.ts):
    // the second route, on a deployment of gpt-image-1.5, with the same three sizes and n. Its 4,000-character
    // prompt bound is the create schema's own, so it takes every job this model takes.
    otherRoutes:
      "OpenAI's Images API (POST /v1/images/generations) and Azure OpenAI in Microsoft Foundry (a gpt-image-1.5 deployment, POST /openai/deployments/{deployment}/images/generations, listed among Azure's image generation models in Microsoft's docs): two live routes; with failover on a job moves from one to the other.",
    source: 'OpenAI Images API, POST /v1/images/generations (size 1024x1024 | 1536x1024 | 1024x1536, n, b64_json)',
    aspectRatios: imageRatios,
    // gpt-image has no 16:9 size: the nearest documented ones are 3:2 and 2:3, and they are served as is.
    servedAs: { '16:9': '3:2, 1536×1024 (gpt-image has no 16:9 size)', '9:16': '2:3, 1024×1536 (gpt-image has no 9:16 size)' },
    produces: {
      formats: ['png'],
      aspectRatios: imageRatios,
      imageSizes: { '1:1': '1024x1024', '16:9': '1536x1024', '9:16': '1024x1536' },
      source: 'OpenAI Images API reference (size 1024x1024 | 1536x1024 | 1024x1536 answered as asked; output_format png, sent by the adapter)',
    },
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    price: { per: 'image', credits: 6, providerCost: 4 },
    // A quarter off for low-priority jobs, out of our margin: the adapter sends them to the same
    // synchronous Images API at the same cost (OpenAI's Batch API halves it, but answers within 24 h,
    // too late for a job's deadline). Never below the provider cost (shared/catalog.ts priceAt).
    lowPriorityDiscount: 0.25,
  },
  'gpt-image-2': {
    model: 'gpt-image-2',
    kind: 'image',
    provider: 'openai',
    providerModelId: 'gpt-image-2',
    // openai-node (the pinned `openai` package, resources/images.d.ts, read 2026-11-27): gpt-image-2 is an
    // ImageModel; `size` takes any WIDTHxHEIGHT with both sides divisible by 16, a ratio between 1:3 and
    // 3:1, at most 3840x2160, "experimental" above 2560x1440; n 1–10; GPT image models answer b64_json.
    // The image kind asks for an aspect ratio, not a size, so each ratio is served at one exact size
    // (providers/openai/adapter.ts gptImage2Sizes), checked against those limits by the fake and a test.
    otherRoutes:
      "OpenAI's Images API. Azure OpenAI in Microsoft Foundry lists gpt-image-2 among its image generation models (MicrosoftDocs/azure-ai-docs articles/foundry/openai/includes/models-azure-direct-openai.md, 2026-06-11), but the Azure pages read state sizes for the gpt-image-1 series only (how-to dall-e.md: three fixed sizes), not whether a deployment takes gpt-image-2's arbitrary sizes, and a second deployment setting would be needed beside AZURE_OPENAI_IMAGE_DEPLOYMENT: no Azure route until those are documented.",
    source:
      "openai-node resources/images.d.ts (ImageModel gpt-image-2; size WIDTHxHEIGHT, multiples of 16, ratio 1:3–3:1, max 3840x2160), read 2026-11-27; price: OpenAI bills gpt-image-2 per token ($30 per 1M image output tokens, as resellers transcribe OpenAI's pricing page), so providerCost is an upper estimate per image at these sizes",
    aspectRatios: imageRatios,
    servedAs: { '1:1': '1920×1920', '16:9': '2560×1440', '9:16': '1440×2560' },
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    price: { per: 'image', credits: 12, providerCost: 8 },
  },
  'gpt-image-2.5-sunburst': {
    model: 'gpt-image-2.5-sunburst',
    kind: 'image',
    provider: 'openai',
    providerModelId: 'gpt-image-2.5-sunburst',
    // openai-node's `size` documentation gives gpt-image-2.5-sunburst / -flare gpt-image-2's arbitrary sizes (WIDTHxHEIGHT, multiples of 16,
    // ratio 1:3–3:1, at most 3840x2160, experimental above 2560x1440): each ratio is sent gpt-image-2's exact size
    // (providers/openai/adapter.ts gpt-image-models.ts); quality also takes xhigh and max (not sent).
    otherRoutes: "OpenAI's Images API only. Azure OpenAI's pages read list no gpt-image-2.5-sunburst deployment: no Azure route.",
    source:
      "openai-node (the pinned `openai` package, resources/images.d.ts, read 2026-12-02): ImageModel 'gpt-image-2.5-sunburst', n 1–10, GPT image models answer b64_json; price: OpenAI bills GPT image models per token ($30 per 1M image output tokens, as resellers transcribe OpenAI's pricing page, which was not readable here), so providerCost is an upper estimate per image at these sizes, as gpt-image-2's",
    aspectRatios: imageRatios,
    servedAs: { '1:1': '1920×1920', '16:9': '2560×1440', '9:16': '1440×2560' },
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    price: { per: 'image', credits: 12, providerCost: 8 },
  },
  'gpt-image-2.5-flare': {
    model: 'gpt-image-2.5-flare',
    kind: 'image',
    provider: 'openai',
    providerModelId: 'gpt-image-2.5-flare',
    // openai-node's `size` documentation gives gpt-image-2.5-sunburst / -flare gpt-image-2's arbitrary sizes (WIDTHxHEIGHT, multiples of 16,
    // ratio 1:3–3:1, at most 3840x2160, experimental above 2560x1440): each ratio is sent gpt-image-2's exact size
    // (providers/openai/adapter.ts gpt-image-models.ts); quality also takes xhigh and max (not sent).
    otherRoutes: "OpenAI's Images API only. Azure OpenAI's pages read list no gpt-image-2.5-flare deployment: no Azure route.",
    source:
      "openai-node (the pinned `openai` package, resources/images.d.ts, read 2026-12-02): ImageModel 'gpt-image-2.5-flare', n 1–10, GPT image models answer b64_json; price: OpenAI bills GPT image models per token ($30 per 1M image output tokens, as resellers transcribe OpenAI's pricing page, which was not readable here), so providerCost is an upper estimate per image at these sizes, as gpt-image-2's",
    aspectRatios: imageRatios,
    servedAs: { '1:1': '1920×1920', '16:9': '2560×1440', '9:16': '1440×2560' },
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    price: { per: 'image', credits: 12, providerCost: 8 },
  },
  'gpt-image-2.6-sunburst': {
    model: 'gpt-image-2.6-sunburst',
    kind: 'image',
    provider: 'openai',
    providerModelId: 'gpt-image-2.6-sunburst',
    // openai-node lists gpt-image-2.6-sunburst / -flare among the image models but not among the ones with arbitrary sizes:
    // they are sent the three standard sizes "supported by the GPT image models" (1024x1024, 1536x1024, 1024x1536).
    // (The SDK names gpt-image-2.5-* as gpt-image-1's replacement after its 2026-10-23 shutdown.)
    otherRoutes: "OpenAI's Images API only. Azure OpenAI's pages read list no gpt-image-2.6-sunburst deployment: no Azure route.",
    source:
      "openai-node (the pinned `openai` package, resources/images.d.ts, read 2026-12-02): ImageModel 'gpt-image-2.6-sunburst', n 1–10, GPT image models answer b64_json; price: OpenAI's own model page (developers.openai.com/api/docs/models/gpt-image-2.6-sunburst, read 2026-12-02) bills it per token, $30 per 1M image output tokens ($5 text input, $8 image input), so providerCost is an upper estimate per image at these sizes, as gpt-image-2's",
    aspectRatios: imageRatios,
    servedAs: { '16:9': '3:2, 1536×1024 (the standard gpt-image sizes have no 16:9)', '9:16': '2:3, 1024×1536 (the standard gpt-image sizes have no 9:16)' },
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    price: { per: 'image', credits: 12, providerCost: 8 },
  },
  'gpt-image-2.6-flare': {
    model: 'gpt-image-2.6-flare',
    kind: 'image',
    provider: 'openai',
    providerModelId: 'gpt-image-2.6-flare',
    // openai-node lists gpt-image-2.6-sunburst / -flare among the image models but not among the ones with arbitrary sizes:
    // they are sent the three standard sizes "supported by the GPT image models" (1024x1024, 1536x1024, 1024x1536).
    // (The SDK names gpt-image-2.5-* as gpt-image-1's replacement after its 2026-10-23 shutdown.)
    otherRoutes: "OpenAI's Images API only. Azure OpenAI's pages read list no gpt-image-2.6-flare deployment: no Azure route.",
    source:
      "openai-node (the pinned `openai` package, resources/images.d.ts, read 2026-12-02): ImageModel 'gpt-image-2.6-flare', n 1–10, GPT image models answer b64_json; price: OpenAI bills GPT image models per token ($30 per 1M image output tokens, as resellers transcribe OpenAI's pricing page, which was not readable here), so providerCost is an upper estimate per image at these sizes, as gpt-image-2's",
    aspectRatios: imageRatios,
    servedAs: { '16:9': '3:2, 1536×1024 (the standard gpt-image sizes have no 16:9)', '9:16': '2:3, 1024×1536 (the standard gpt-image sizes have no 9:16)' },
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    price: { per: 'image', credits: 12, providerCost: 8 },
  },
  'seedream-4.5': {
    model: 'seedream-4.5',
    kind: 'image',
    provider: 'fal',
    providerModelId: 'fal-ai/bytedance/seedream/v4.5/text-to-image',
    falRequest: 'seedream',
    // fal's input types of fal-ai/bytedance/seedream/v4.5/text-to-image and /edit have `seed` (5.0 Lite's do not).
    controls: ['seed'],
    secondaryModelIds: { edit: 'fal-ai/bytedance/seedream/v4.5/edit' },
    // fal.ai/docs/model-api-reference/image-generation-api/bytedance-seedream-v4.5: image_size is a preset or
    // { width, height } with width and height 1920–4096 or a total of 2560×1440 to 4096×4096 pixels; the
    // presets (square_hd = 1024×1024 …) are below that minimum, so explicit sizes are sent
    // (seedreamImageSize: 2048×2048, 2560×1440, 1440×2560). num_images 1–6.
    // BytePlus ModelArk is the second route (providers/byteplus/adapter.ts, providers/byteplus/contract.ts):
    // the same three sizes as `size` "WxH", reference images as `image`, one call per image.
    otherRoutes:
      "fal (fal-ai/bytedance/seedream/v4.5/*) and BytePlus ModelArk (POST /api/v3/images/generations, ByteDance's byteplus-python-sdk-v2 and docs.byteplus.com ModelArk): two live routes; with failover on a job moves from one to the other. The Ark model id seedream-4-5-251128 is from third-party docs (BytePlus's model list rows could not be read): ARK_SEEDREAM_MODEL overrides it.",
    source: 'fal.ai model page fal-ai/bytedance/seedream/v4.5/text-to-image (image_size {width,height} ≥ 2560×1440 pixels, num_images 1-6; /edit: image_urls)',
    aspectRatios: imageRatios,
    servedAs: { '1:1': '2048×2048', '16:9': '2560×1440', '9:16': '1440×2560' },
    // fal's page pins no output format for Seedream 4.5 (its schema has no output_format field): any
    // image format is taken and stored as PNG.
    produces: {
      formats: ['png', 'jpeg', 'webp'],
      aspectRatios: imageRatios,
      imageSizes: { '1:1': '2048x2048', '16:9': '2560x1440', '9:16': '1440x2560' },
      source: 'fal.ai model page fal-ai/bytedance/seedream/v4.5/text-to-image (image_size { width, height } answered at that size)',
    },
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    price: { per: 'image', credits: 4, providerCost: 3 },
    // Low-priority jobs fill slots that would idle: a quarter off, out of our margin (fal bills the
    // same request the same), never below the provider cost (shared/catalog.ts priceAt).
    lowPriorityDiscount: 0.25,
  },
  'seedream-5.0-lite': {
    model: 'seedream-5.0-lite',
    kind: 'image',
    provider: 'fal',
    providerModelId: 'fal-ai/bytedance/seedream/v5/lite/text-to-image',
    falRequest: 'seedream',
    secondaryModelIds: { edit: 'fal-ai/bytedance/seedream/v5/lite/edit' },
    // fal.ai/models/bytedance/seedream/v5/lite/text-to-image/llms.txt: $0.035 per image; image_size a preset
    // or { width, height } whose total pixels lie between 2560×1440 and 4096×4096 (the pinned client's type
    // says 3072×3072 as the top): the three sizes Seedream 4.5 is sent (2048×2048, 2560×1440, 1440×2560) lie
    // inside both, so the same explicit sizes are sent. num_images is unbounded in fal's type; the create
    // schema's 1–4 applies. fal's page names the endpoint without the fal-ai/ prefix; the catalog uses the id
    // the pinned @fal-ai/client types (EndpointTypeMap), whose input it is checked against.
    otherRoutes:
      "fal (fal-ai/bytedance/seedream/v5/lite/*) only. BytePlus ModelArk serves Seedream 5.0 too, but its model id was not found in BytePlus's own pages read (only resellers name one): no BytePlus route. No alternate.",
    source:
      'fal.ai/models/bytedance/seedream/v5/lite/text-to-image/llms.txt ($0.035 per image; image_size total pixels 2560×1440 to 4096×4096) and @fal-ai/client EndpointTypeMap fal-ai/bytedance/seedream/v5/lite/text-to-image and /edit (prompt, image_size, num_images; /edit: image_urls)',
    aspectRatios: imageRatios,
    servedAs: { '1:1': '2048×2048', '16:9': '2560×1440', '9:16': '1440×2560' },
    // fal's type has no output_format for Seedream 5.0 Lite: any image format is taken and stored as PNG.
    produces: {
      formats: ['png', 'jpeg', 'webp'],
      aspectRatios: imageRatios,
      imageSizes: { '1:1': '2048x2048', '16:9': '2560x1440', '9:16': '1440x2560' },
      source: 'fal.ai model page bytedance/seedream/v5/lite/text-to-image (image_size { width, height } answered at that size)',
    },
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    // $0.035 an image is 1.25 credits at the catalog's rate: the provider cost rounds up to 2.
    price: { per: 'image', credits: 3, providerCost: 2 },
  },
} as const satisfies Record<string, ModelEntry>;

/** The image models in document order (the create body's `model` enum). */
export const imageModels = Object.keys(entries) as (keyof typeof entries)[] as [keyof typeof entries, ...(keyof typeof entries)[]];
