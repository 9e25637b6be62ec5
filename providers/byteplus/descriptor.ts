// BytePlus ModelArk (Seedream 4.5, Seedance 1.5 pro and Seedance 2.0): the second route of seedream-4.5,
// seedance-1.5, seedance-2.0 and seedance-2.0-fast (providers/byteplus/adapter.ts).
import { defineProvider } from '../define.js';

export const byteplus = defineProvider({
  name: 'byteplus',
  keys: ['ARK_API_KEY'],
  config: ({ optionalString, url }) => ({
    ARK_API_KEY: optionalString.describe("BytePlus ModelArk's API key: the Seedream and Seedance second routes are live only with it."),
    ARK_BASE_URL: url.default('https://ark.ap-southeast.bytepluses.com').describe("ModelArk's API origin; a trailing /api/v3 (the SDK's base) is dropped."),
    ARK_SEEDREAM_MODEL: optionalString.describe('Replaces the catalog\'s Seedream 4.5 model id on ModelArk (an Ark Endpoint ID "ep-…" works too).'),
    ARK_SEEDANCE_MODEL: optionalString.describe('Replaces the catalog\'s Seedance 1.5 pro model id on ModelArk (an Ark Endpoint ID "ep-…" works too).'),
  }),
  /**
   * BytePlus ModelArk answers signed URLs on its own TOS bucket: ModelArk's image generation reference
   * shows ark-content-generation-v2-ap-southeast-1.tos-ap-southeast-1.bytepluses.com; the bucket's
   * suffix follows the region. Other buckets on BytePlus's object storage are anyone's, so only
   * ark-content-generation-* buckets are allowed; no key goes there. Seedream images arrive as base64.
   */
  outputHosts: { hosts: ['ark-content-generation-*.tos-*.bytepluses.com'], keyHosts: [] },
  // DELETE …/contents/generations/tasks/{id} stops queued video tasks (images finish within the submit).
  cancel: 'queued',
  // Seedream answers an image generation synchronously.
  longestCallMs: 600_000,
  routes: {
    'seedream-4.5': {
      providerModelId: 'seedream-4-5-251128',
      source:
        'byteplus-python-sdk-v2 3.0.63 byteplussdkarkruntime (Images.generate: POST /api/v3/images/generations, model, prompt, image, size, sequential_image_generation, response_format b64_json, watermark); model id and the 2560×1440 … 4096×4096 pixel rule from third-party docs only (ARK_SEEDREAM_MODEL overrides the id): providers/byteplus/contract.ts',
      accepts: { aspectRatios: ['1:1', '16:9', '9:16'] },
      // Seedream answers JPEG (the b64 bytes decide; PNG and WebP are taken too): stored as PNG.
      produces: {
        formats: ['jpeg', 'png', 'webp'],
        aspectRatios: ['1:1', '16:9', '9:16'],
        imageSizes: { '1:1': '2048x2048', '16:9': '2560x1440', '9:16': '1440x2560' },
        source: 'byteplus-python-sdk-v2 3.0.63 (Images.generate size "WxH", answered at that size); the image format from third-party docs only (JPEG)',
      },
    },
    'seedance-1.5': {
      providerModelId: 'seedance-1-5-pro-251215',
      source:
        'byteplus-python-sdk-v2 3.0.63 byteplussdkarkruntime (Tasks.create: POST /api/v3/contents/generations/tasks, model, content[{ type: text }], ratio, duration, resolution, generate_audio, watermark → { id }; Tasks.get status queued | running | succeeded | failed | cancelled, content.video_url; Tasks.delete) and docs.byteplus.com ModelArk 1520757; model id, ratios, 4–12 s and 480p/720p from third-party docs only (1080p disputed, image roles unconfirmed): providers/byteplus/contract.ts',
      // Tasks.create's top-level seed and generate_audio (byteplus-python-sdk-v2 3.0.63, providers/byteplus/contract.ts).
      controls: ['seed', 'audio'],
      accepts: {
        durations: [4, 5, 6, 7, 8, 9, 10, 11, 12],
        resolutions: ['480p', '720p'],
        aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
        imageInputs: false,
      },
      produces: {
        formats: ['mp4'],
        aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
        resolutions: ['480p', '720p'],
        source: 'docs.byteplus.com ModelArk 1520757 (ratio and resolution 480p | 720p of the MP4 answered as asked; third-party docs for the values)',
      },
    },

    'seedance-2.0': {
      providerModelId: 'dreamina-seedance-2-0-260128',
      source:
        "BytePlus's own ark-cli (github.com/byteplus-sdk/ark-cli v1.0.19, skills/arkcli-models/references/arkcli-models-scenario-table.md and skills/arkcli-gen/references/arkcli-gen.md, read 2026-12-02): the model id dreamina-seedance-2-0-260128 on the same task API as Seedance 1.5 (top-level ratio, resolution, duration, generate_audio); the Seedance 2.0 series needs a prepaid resource pack (docs.byteplus.com ModelArk 2291680). 4–15 s, 480p/720p and the six ratios are fal's for the model (its text-to-video page), as third-party Ark references also state: no BytePlus page read gives them",
      // Tasks.create's top-level seed and generate_audio (byteplus-python-sdk-v2 3.0.63, providers/byteplus/contract.ts).
      controls: ['seed', 'audio'],
      accepts: {
        durations: [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        resolutions: ['480p', '720p'],
        aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
        imageInputs: false,
      },
      produces: {
        formats: ['mp4'],
        aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
        resolutions: ['480p', '720p'],
        source: 'docs.byteplus.com ModelArk 1520757 (ratio and resolution of the MP4 answered as asked, as for Seedance 1.5)',
      },
    },
    'seedance-2.0-fast': {
      providerModelId: 'dreamina-seedance-2-0-fast-260128',
      source:
        "BytePlus's own ark-cli (github.com/byteplus-sdk/ark-cli v1.0.19, skills/arkcli-models/references/arkcli-models-scenario-table.md and skills/arkcli-gen/references/arkcli-gen.md, read 2026-12-02): the model id dreamina-seedance-2-0-fast-260128 on the same task API as Seedance 1.5 (top-level ratio, resolution, duration, generate_audio); the Seedance 2.0 series needs a prepaid resource pack (docs.byteplus.com ModelArk 2291680). 4–15 s, 480p/720p and the six ratios are fal's for the model (its text-to-video page), as third-party Ark references also state: no BytePlus page read gives them",
      // Tasks.create's top-level seed and generate_audio (byteplus-python-sdk-v2 3.0.63, providers/byteplus/contract.ts).
      controls: ['seed', 'audio'],
      accepts: {
        durations: [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        resolutions: ['480p', '720p'],
        aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
        imageInputs: false,
      },
      produces: {
        formats: ['mp4'],
        aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
        resolutions: ['480p', '720p'],
        source: 'docs.byteplus.com ModelArk 1520757 (ratio and resolution of the MP4 answered as asked, as for Seedance 1.5)',
      },
    },
  },
});
