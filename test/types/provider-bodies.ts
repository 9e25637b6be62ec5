// Type tests, run by `npm run lint` (tsc): the request-body checks against the providers' own SDK
// types (activities/providers/sdk-types.ts) bite. Each `@ts-expect-error` line holds a body an
// adapter must never send; were the check to stop refusing it, tsc would fail on the unused directive.
// The adapters' real bodies are checked where they are built (`falBody(endpoint)(input)` in
// providers/fal/requests.ts, `exact<…>()(body)` in byteplus.ts and xai.ts, `satisfies` on the literal bodies of
// openai.ts, azure.ts, elevenlabs.ts, google.ts and alibaba.ts; the OpenAI, ElevenLabs and Google
// contracts through `Conforms` in sdk.ts).
import type { FalInput } from '../../providers/fal/contract.js';
import type { Conforms, ElevenLabsSdkBody, GoogleSdkVideosConfig, OpenAISdkImageParams } from '../../activities/providers/sdk-types.js';
import type { ArkImageGenerationRequest, ArkVideoTaskRequest } from '../../providers/byteplus/contract.js';
import type { XaiVideoGenerationRequest } from '../../providers/xai/contract.js';
import { falBody } from '../../providers/fal/requests.js';
import { allOf, exact } from '../../activities/providers/body-check.js';

const url = 'https://example.test/in.png';
type KlingTurboImage = FalInput<'fal-ai/kling-video/v3/turbo/pro/image-to-video'>;

// What the adapters send is accepted.
export const veoReference = {
  prompt: 'a fox',
  image_urls: [url, url],
  duration: '8s',
  resolution: '720p',
  aspect_ratio: '16:9',
  generate_audio: true,
} satisfies FalInput<'fal-ai/veo3.1/reference-to-video'>;
export const klingImage = {
  prompt: 'a fox',
  start_image_url: url,
  end_image_url: url,
  duration: '10',
  generate_audio: true,
} satisfies FalInput<'fal-ai/kling-video/v2.6/pro/image-to-video'>;
export const klingTurboImage = { prompt: 'a fox', image_url: url, duration: '12' } satisfies KlingTurboImage;
export const nano = { prompt: 'a fox', num_images: 2, aspect_ratio: '16:9', output_format: 'png' } satisfies FalInput<'fal-ai/nano-banana-2'>;
export const openai = { model: 'gpt-image-1.5', prompt: 'a fox', n: 1, size: '1536x1024', output_format: 'png' } satisfies OpenAISdkImageParams;
export const elevenlabs = {
  text: 'Hello',
  model_id: 'eleven_multilingual_v2',
  voice_settings: { stability: 0.5, similarity_boost: 0.7, speed: 1.1 },
} satisfies ElevenLabsSdkBody;

// The deliberately wrong bodies.
// @ts-expect-error Veo reference-to-video has no `image_url` (its images are `image_urls`)
export const veoWrongField = { prompt: 'a fox', image_urls: [url], image_url: url } satisfies FalInput<'fal-ai/veo3.1/reference-to-video'>;
// @ts-expect-error Kling 2.6 renders 5 or 10 seconds, not 7
export const klingWrongDuration = { prompt: 'a fox', duration: '7' } satisfies FalInput<'fal-ai/kling-video/v2.6/pro/text-to-video'>;
// @ts-expect-error Kling 2.6 image-to-video has no cfg_scale (its text-to-video has)
export const klingWrongCfg = { prompt: 'a fox', start_image_url: url, cfg_scale: 0.5 } satisfies FalInput<'fal-ai/kling-video/v2.6/pro/image-to-video'>;
// @ts-expect-error Kling 3.0 Turbo's first frame is `image_url`, not Kling 3.0 Pro's `start_image_url` (a transcribed endpoint is checked too)
export const klingTurboWrongField = { prompt: 'a fox', image_url: url, start_image_url: url } satisfies KlingTurboImage;
// @ts-expect-error InfiniteTalk needs the audio
export const infinitalkNoAudio = { prompt: 'talking', image_url: url } satisfies FalInput<'fal-ai/infinitalk'>;
// @ts-expect-error OpenAI Images takes a `size`, not an aspect ratio
export const openaiWrongField = { prompt: 'a fox', aspect_ratio: '16:9' } satisfies OpenAISdkImageParams;
// @ts-expect-error the ElevenLabs wire body is snake_case: `modelId` is the SDK's own camelCase field
export const elevenlabsCamel = { text: 'Hello', modelId: 'eleven_multilingual_v2' } satisfies ElevenLabsSdkBody;

// `Conforms`, which keeps the OpenAI and ElevenLabs contracts inside the SDK types, refuses a contract
// with a field the SDK lacks and one whose values the SDK does not take.
export const conformsOk: Conforms<{ prompt: string; n?: number }, OpenAISdkImageParams> = true;
// @ts-expect-error `aspect_ratio` is not a field of ImageGenerateParamsNonStreaming
export const conformsExtraField: Conforms<{ prompt: string; aspect_ratio?: string }, OpenAISdkImageParams> = true;
// @ts-expect-error the non-streaming call takes `stream: false` only
export const conformsWrongValue: Conforms<{ prompt: string; stream?: boolean }, OpenAISdkImageParams> = true;
// @ts-expect-error a nested field the SDK lacks (voice_settings.pitch) is caught too
export const conformsNested: Conforms<{ text: string; voice_settings?: { pitch?: number } }, ElevenLabsSdkBody> = true;
// @ts-expect-error Veo's durationSeconds is a number in Google's GenerateVideosConfig, not fal's "8s" string
export const conformsGoogleDuration: Conforms<{ durationSeconds?: '8s' }, GoogleSdkVideosConfig> = true;
// @ts-expect-error the SDK has no `duration` (its field is durationSeconds)
export const conformsGoogleField: Conforms<{ duration?: number }, GoogleSdkVideosConfig> = true;

// Bodies composed from parts (a shared `base`, an optional spread), as the adapters build them. A plain
// `satisfies` checks only the literal's own fields: the misspelled `genrate_audio` below, spread in,
// passes it unnoticed. That is the hole `falBody` and `exact` close.
const end = url as string | undefined;
const klingBase = { prompt: 'a fox', duration: '5' as const, generate_audio: true };
const klingTypo = { prompt: 'a fox', duration: '5' as const, genrate_audio: true };
export const satisfiesMissesSpread = { ...klingTypo, start_image_url: url } satisfies FalInput<'fal-ai/kling-video/v3/pro/image-to-video'>;

// fal (providers/fal/requests.ts): what the Kling, Veo and Seedance builders compose is accepted …
type KlingImageToVideo = 'fal-ai/kling-video/v3/pro/image-to-video' | 'fal-ai/kling-video/v2.6/pro/image-to-video';
const klingI2v = 'fal-ai/kling-video/v3/pro/image-to-video' as KlingImageToVideo;
export const falComposed = falBody(klingI2v)({ ...klingBase, start_image_url: url, ...(end ? { end_image_url: end } : {}) });
const veoBase = { prompt: 'a fox', duration: '8s' as const, resolution: '720p' as const, aspect_ratio: '16:9' as const, generate_audio: true };
export const veoComposed = falBody('fal-ai/veo3.1/reference-to-video')({ ...veoBase, image_urls: [url] });
// … and a misspelled field through the shared base, through the optional end-frame spread, or nested, is not.
// @ts-expect-error `genrate_audio` reaches the body through the base spread
export const falBaseTypo = falBody(klingI2v)({ ...klingTypo, start_image_url: url });
// @ts-expect-error `end_imge_url` reaches the body through the optional end-frame spread
export const falEndTypo = falBody(klingI2v)({ ...klingBase, start_image_url: url, ...(end ? { end_imge_url: end } : {}) });
// @ts-expect-error Kling 2.6 image-to-video has no cfg_scale: a field one endpoint of the role lacks is refused too
export const falOneEndpointLacks = falBody(klingI2v)({ ...klingBase, start_image_url: url, cfg_scale: 0.5 });
// @ts-expect-error Veo reference-to-video takes 16:9 or 9:16, not "auto" (which image-to-video takes)
export const falWrongValue = falBody('fal-ai/veo3.1/reference-to-video')({ ...veoBase, aspect_ratio: 'auto' as const, image_urls: [url] });
// @ts-expect-error a field misspelled inside a nested object (Seedream's image_size) is refused
export const falNestedTypo = falBody('fal-ai/bytedance/seedream/v4.5/text-to-image')({ prompt: 'a fox', image_size: { width: 2048, hieght: 2048 } });

// BytePlus (byteplus.ts): the reference images come in through an optional spread.
const images = [url] as string[] | undefined;
export const arkComposed = exact<ArkImageGenerationRequest>()({ model: 'm', prompt: 'a fox', ...(images ? { image: images } : {}), size: '2048x2048' });
// @ts-expect-error `images` (the field is `image`) reaches the body through the optional spread
export const arkSpreadTypo = exact<ArkImageGenerationRequest>()({ model: 'm', prompt: 'a fox', ...(images ? { images } : {}), size: '2048x2048' });
// @ts-expect-error `aspect_ratio` is not an Ark video task field (it is `ratio`), even when spread in
export const arkTaskTypo = exact<ArkVideoTaskRequest>()({ model: 'm', content: [{ type: 'text', text: 'a fox' }], ...{ aspect_ratio: '16:9' } });

// xAI (xai.ts): the first frame comes in through an optional spread.
export const xaiComposed = exact<XaiVideoGenerationRequest>()({ prompt: 'a fox', ...(end ? { image: { url: end } } : {}) });
// @ts-expect-error `image_url` is the gRPC spelling of the image's URL; the REST image object has `url` only
export const xaiNestedTypo = exact<XaiVideoGenerationRequest>()({ prompt: 'a fox', ...(end ? { image: { url: end, image_url: end } } : {}) });
// @ts-expect-error `aspectRatio` (camelCase) reaches the body through a spread
export const xaiSpreadTypo = exact<XaiVideoGenerationRequest>()({ prompt: 'a fox', ...{ aspectRatio: '16:9' } });

// The enum lists the builders narrow catalog values with must list the provider type's values exactly.
export const listExact = allOf<'16:9' | '9:16'>()(['16:9', '9:16']);
// @ts-expect-error a value of the type is missing
export const listMissing = allOf<'16:9' | '9:16'>()(['16:9']);
// @ts-expect-error a value the type lacks
export const listExtra = allOf<'16:9' | '9:16'>()(['16:9', '9:16', '1:1']);
