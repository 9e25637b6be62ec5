// Google Gemini API (Veo 3.1) video generation request and answers. Read 2026-11-25 through the
// search tool's stored copies; what each source does and does not establish:
//  - Google's own page ai.google.dev/gemini-api/docs/video ("Generate videos with Veo 3.1 in Gemini
//    API"; the hl=hi copy and an English mirror of it were what could be read): Veo 3.1 makes "8-second
//    720p, 1080p or 4k videos" with native audio; landscape (16:9) and portrait (9:16); first and/or
//    last frame; "up to three reference images"; generation is a long-running operation that is polled.
//    The model id veo-3.1-generate-preview is the one this repository's catalog already cited from that
//    page. The page's REST tab itself (the exact URL, header and body) was NOT in what could be read.
//  - Google's long-running Operation resource (cloud.google.com REST references, "JSON
//    representation"): { name, metadata, done, error?: Status, response? }; "If done == false, neither
//    error nor response is set. If done == true, exactly one of error or response". Status is
//    { code, message, details }.
//  - NOT from Google's text (third-party API docs and public client code that call the Gemini API
//    corroborate them; they are no authority): the path {base}/v1beta/models/{model}:predictLongRunning,
//    the `x-goog-api-key` header, polling GET {base}/v1beta/{operation name}, the result path
//    response.generateVideoResponse.generatedSamples[].video.uri (downloaded with the key header), and
//    the Gemini API's HTTP error body { error: { code, message, status } }. Confirm these against
//    Google's REST reference before relying on the route in production.
//
// Where the documentation that could be read is silent, this says so instead of guessing:
//  - durations: Google's page states 8-second videos; 4 s and 6 s are listed by resellers of the same
//    model, not in the Google text read here, and whether `durationSeconds` is a number or a string
//    on the wire was not confirmed; so this route takes 8-second jobs only and does not send
//    `durationSeconds` (the model's 8 seconds apply);
//  - the wire shape of image inputs (first frame, last frame, reference images) could not be read from
//    Google's REST reference (SDK field names differ from the wire), so this route is text-to-video
//    only: jobs with image inputs never fail over to it (catalog `accepts`);
//  - 4k is not offered (fal's route does not offer it either);
//  - cancel: no cancel method for these operations was found in what could be read (not confirmed
//    absent), so cancel is a no-op as for xAI;
//  - the host the download uri redirects to is not documented (see outputs.ts).
import { z } from 'zod';

export const googleVeoModelIds = ['veo-3.1-generate-preview'] as const;
export const googleVeoAspectRatios = ['16:9', '9:16'] as const;
export const googleVeoResolutions = ['720p', '1080p'] as const;
/** The durations this route takes (see above: 8 s is what Google's page states). */
export const googleVeoDurations = [8] as const;

export const googleVeoInstance = z.strictObject({
  prompt: z.string().min(1),
});

export const googleVeoParameters = z.strictObject({
  aspectRatio: z.enum(googleVeoAspectRatios).optional(),
  resolution: z.enum(googleVeoResolutions).optional(),
  negativePrompt: z.string().optional(),
});

/** POST {base}/v1beta/models/{model}:predictLongRunning */
export const googleVeoPredictRequest = z.strictObject({
  instances: z.array(googleVeoInstance).length(1),
  parameters: googleVeoParameters.optional(),
});

export type GoogleVeoPredictRequest = z.input<typeof googleVeoPredictRequest>;

/** google.rpc.Status as the Gemini API answers it (in an operation's `error`, or an HTTP error body's `error`). */
export interface GoogleStatus {
  code: number;
  message: string;
  status?: string;
  details?: unknown[];
}

/** The answer of predictLongRunning and of GET {base}/v1beta/{name}. */
export interface GoogleVeoOperation {
  name: string;
  done?: boolean;
  metadata?: Record<string, unknown>;
  error?: GoogleStatus;
  response?: {
    '@type'?: string;
    generateVideoResponse?: {
      generatedSamples?: { video?: { uri?: string } }[];
      /** Present when samples were filtered out by Google's safety filters (the SDKs expose it). */
      raiMediaFilteredCount?: number;
      raiMediaFilteredReasons?: string[];
    };
  };
}
