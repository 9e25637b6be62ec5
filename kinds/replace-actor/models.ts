// The replace-actor kind's catalog model (shared/catalog.ts has the rules).
// Values follow each provider's documentation; the `source` of each entry says where. Second routes:
// providers/<name>/descriptor.ts `routes`.
import type { ModelEntry } from '../../shared/catalog/types.js';

/** The replace-actor model's catalog entry: the kinds' models list (kinds/models.ts) reads it. */
export const entries = {
  // One fixed model name for the kind.
  'replace-actor': {
    model: 'replace-actor',
    kind: 'replace_actor',
    provider: 'fal',
    providerModelId: 'fal-ai/wan/v2.2-14b/animate/replace',
    falRequest: 'wan-animate-replace',
    // fal.ai/models/fal-ai/wan/v2.2-14b/animate/replace/llms.txt: video_url, image_url (resized and
    // center-cropped to the output), resolution 480p | 580p | 720p. The output follows the motion video's
    // length, so `duration` is enforced by the motion video we hand over, not by a provider field.
    // Alibaba, the maker of Wan, serves the same model on Model Studio (providers/alibaba/adapter.ts,
    // providers/alibaba/contract.ts): the second route. It takes everything this model takes once the inputs are
    // conformed (3–30 s inside its 2–30 s, a 720p frame of 1:1, 9:16 or 16:9, an actor PNG at that frame),
    // so `accepts` only pins the resolution and aspect ratios the conformed inputs were checked for.
    otherRoutes:
      "fal (fal-ai/wan/v2.2-14b/animate/replace) and Alibaba Cloud Model Studio (alibabacloud.com/help/en/model-studio/wan-animate-mix-api: wan2.2-animate-mix, video character swap, standard mode wan-std, through DashScope's asynchronous task API): two live routes; with failover on a job moves from one to the other.",
    source: 'fal.ai model page fal-ai/wan/v2.2-14b/animate/replace (video_url, image_url, resolution 480p | 580p | 720p)',
    aspectRatios: ['1:1', '9:16', '16:9'],
    defaultAspectRatio: '9:16',
    // The output follows the motion video, which is conformed to the asked aspect ratio at 720p first
    // (activities/providers/conform.ts); resolution 720p is sent.
    produces: {
      formats: ['mp4'],
      aspectRatios: ['1:1', '9:16', '16:9'],
      resolutions: ['720p'],
      source: 'fal.ai model page fal-ai/wan/v2.2-14b/animate/replace (resolution 480p | 580p | 720p; image resized and center-cropped to the output)',
    },
    durations: { min: 3, max: 30 },
    defaultDuration: 30,
    resolutions: ['720p'],
    defaultResolution: '720p',
    deadlineSeconds: 1800,
    price: { per: 'second', credits: 8, providerCost: 5 },
  },
} as const satisfies Record<string, ModelEntry>;

/** The kind's one model name. */
export const replaceActorModel = 'replace-actor' satisfies keyof typeof entries;
