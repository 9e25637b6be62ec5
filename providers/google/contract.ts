// Google Gemini API (Veo 3.1) video generation request and answers, transcribed from Google's own
// JavaScript SDK, @google/genai 2.32.0 (a pinned devDependency; the test "the body equals what
// Google's own SDK sends" in test/integration/provider-google.test.ts runs that SDK against the fake
// and compares). What each source establishes:
//  - @google/genai 2.32.0 dist/node/index.mjs, the Gemini Developer API ("mldev") path of
//    Models.generateVideosInternal: POST `{model}:predictLongRunning` under the API version `v1beta`
//    (GOOGLE_AI_API_DEFAULT_VERSION) on https://generativelanguage.googleapis.com/, the API key in the
//    `x-goog-api-key` header (GOOGLE_API_KEY_HEADER). Its body is built by
//    generateVideosParametersToMldev / generateVideosSourceToMldev / generateVideosConfigToMldev:
//      instances[0].prompt;
//      instances[0].image and instances[0].lastFrame: imageToMldev, i.e. { bytesBase64Encoded,
//        mimeType } (inline base64; `gcsUri` throws "only supported in Gemini Enterprise Agent
//        Platform mode", so there is no URL form on the Gemini API, unlike Vertex's gcsUri);
//      instances[0].referenceImages[]: videoGenerationReferenceImageToMldev, { image: { bytesBase64Encoded,
//        mimeType }, referenceType } with referenceType "ASSET" | "STYLE" (enum VideoGenerationReferenceType);
//      parameters.aspectRatio, .resolution, .durationSeconds (a number: GenerateVideosConfig.durationSeconds),
//        .negativePrompt, .sampleCount (numberOfVideos), .personGeneration, .enhancePrompt;
//      refused on the Gemini API (the converter throws): outputGcsUri, fps, seed, pubsubTopic,
//        generateAudio, mask, compressionQuality, labels, resizeMode. Veo 3.1 makes audio on its own
//        there; no audio switch is sent.
//  - the same file, Operations.getVideosOperationInternal (mldev): GET `{operationName}` under
//    v1beta, so GET {base}/v1beta/models/{model}/operations/{id}; generateVideosOperationFromMldev reads
//    { name, metadata, done, error, response.generateVideoResponse }, and generateVideosResponseFromMldev
//    / videoFromMldev read generatedSamples[].video.{ uri, encodedVideo, encoding } and
//    raiMediaFilteredCount / raiMediaFilteredReasons. The uri is downloaded with the key
//    (Files.download).
//  - Google's long-running Operation resource (cloud.google.com REST references): done == true means
//    exactly one of error or response; Status is { code, message, details }. The Gemini API's HTTP
//    error body { error: { code, message, status } } is what the SDK's ApiError reads.
//  - ai.google.dev/gemini-api/docs/video ("Generate videos with Veo 3.1 in Gemini API", read through
//    the search tool's stored copies): 8-second videos at 720p, 1080p or 4k, 16:9 or 9:16, first and/or
//    last frame, "up to three reference images", model id veo-3.1-generate-preview.
//  - Google's Vertex AI Veo 3.1 model page (cloud.google.com/vertex-ai/generative-ai/docs/models/veo/
//    3-1-generate, a stored copy): model ids veo-3.1-generate-preview and veo-3.1-fast-generate-preview;
//    "4, 6, or 8 seconds; reference image to video only supports 8 seconds" — on Vertex.
//
// Not confirmed, so this route does not rely on it:
//  - 4 s and 6 s on the Gemini API: the SDK passes durationSeconds through without a list, Google's
//    Gemini API page states 8-second videos, and the 4/6/8 list read is Vertex's. This route sends
//    durationSeconds: 8 only (googleVeoDurations).
//  - @google/genai 3.x (3.1.0, 3.3.0) no longer sends generateVideos to the Gemini Developer API: its
//    generateVideosInternal throws "only supported by the Gemini Enterprise Agent Platform" there and
//    its README lists generateVideos as Enterprise-only. 2.32.0 (2026-10-29) is the last release whose
//    Gemini API path is read here. Whether the Gemini API keeps serving predictLongRunning for Veo is
//    not established by that; Google's video page still documents it.
//  - cancel: no cancel method for these operations in the SDK's mldev path, so cancel is a no-op;
//  - the host the download uri redirects to (see outputs.ts); 4k is not offered (nor on fal).
import { z } from 'zod';

export const googleVeoModelIds = ['veo-3.1-generate-preview', 'veo-3.1-fast-generate-preview'] as const;
export const googleVeoAspectRatios = ['16:9', '9:16'] as const;
export const googleVeoResolutions = ['720p', '1080p'] as const;
/** The durations this route takes (see above: 8 s is what Google's Gemini API page states). */
export const googleVeoDurations = [8] as const;
/** VideoGenerationReferenceType of the SDK. */
const googleVeoReferenceTypes = ['ASSET', 'STYLE'] as const;
const googleVeoMaxReferenceImages = 3;

/** imageToMldev: inline bytes only on the Gemini API. */
const googleVeoImage = z.strictObject({
  bytesBase64Encoded: z
    .string()
    .min(1)
    .regex(/^[A-Za-z0-9+/]+={0,2}$/, 'base64'),
  mimeType: z.string().regex(/^image\/[a-z0-9.+-]+$/),
});

const googleVeoReferenceImage = z.strictObject({
  image: googleVeoImage,
  referenceType: z.enum(googleVeoReferenceTypes),
});

const googleVeoInstance = z
  .strictObject({
    prompt: z.string().min(1),
    image: googleVeoImage.optional(),
    lastFrame: googleVeoImage.optional(),
    referenceImages: z.array(googleVeoReferenceImage).min(1).max(googleVeoMaxReferenceImages).optional(),
  })
  // GenerateVideosConfig.lastFrame: "Only supported for image to video use cases"; referenceImages:
  // "The image, video, or last_frame field are not supported".
  .refine((i) => !i.lastFrame || i.image, { message: 'lastFrame needs image (the first frame)', path: ['lastFrame'] })
  .refine((i) => !i.referenceImages || (!i.image && !i.lastFrame), {
    message: 'referenceImages cannot be combined with image or lastFrame',
    path: ['referenceImages'],
  });

const googleVeoParameters = z.strictObject({
  aspectRatio: z.enum(googleVeoAspectRatios).optional(),
  resolution: z.enum(googleVeoResolutions).optional(),
  durationSeconds: z.literal(googleVeoDurations).optional(),
  negativePrompt: z.string().optional(),
});

/** POST {base}/v1beta/models/{model}:predictLongRunning */
export const googleVeoPredictRequest = z.strictObject({
  instances: z.array(googleVeoInstance).length(1),
  parameters: googleVeoParameters.optional(),
});

export type GoogleVeoPredictRequest = z.input<typeof googleVeoPredictRequest>;
export type GoogleVeoImage = z.input<typeof googleVeoImage>;
export type GoogleVeoParameters = z.input<typeof googleVeoParameters>;

/** google.rpc.Status as the Gemini API answers it (in an operation's `error`, or an HTTP error body's `error`). */
export interface GoogleStatus {
  code: number;
  message: string;
  status?: string;
  details?: unknown[];
}

/** The answer of predictLongRunning and of GET {base}/v1beta/{name} (generateVideosOperationFromMldev). */
export interface GoogleVeoOperation {
  name: string;
  done?: boolean;
  metadata?: Record<string, unknown>;
  error?: GoogleStatus;
  response?: {
    '@type'?: string;
    generateVideoResponse?: {
      /** videoFromMldev: `uri`, or the bytes inline as `encodedVideo` with `encoding` (its MIME type). */
      generatedSamples?: { video?: { uri?: string; encodedVideo?: string; encoding?: string } }[];
      raiMediaFilteredCount?: number;
      raiMediaFilteredReasons?: string[];
    };
  };
}
