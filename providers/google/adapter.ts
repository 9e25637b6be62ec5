// Google Gemini API video adapter (Veo 3.1 and Veo 3.1 Fast; the wire of providers/google/contract.ts, read
// from Google's SDK @google/genai): POST {base}/v1beta/models/{model}:predictLongRunning with
// `x-goog-api-key` and { instances: [{ prompt, image?, lastFrame?, referenceImages? }], parameters: {
// aspectRatio, resolution, durationSeconds } } → an Operation { name }; GET {base}/v1beta/{name} until
// `done: true`, then either `error: { code, message, status }` or
// `response.generateVideoResponse.generatedSamples[].video.uri`, which is downloaded with the same key
// header (outputHeaders: sent to the API's origin only, never after a redirect elsewhere), or the video
// inline (`encodedVideo`), which is stored under the job here. Image
// inputs go inline as base64 (the Gemini API takes no image URL), read from our store. The route is
// declared for veo-3.1, sora-2-pro and sora-2 (8 s only) and not offered while Google documents no
// Veo model on the Gemini API (providers/google/descriptor.ts says why).
// Google documents no cancel for these operations: cancel is a no-op, the workflow stops polling.
// GEMINI_BASE_URL may carry the `/v1beta` of the SDKs' base URL: it is dropped, so paths are never
// /v1beta/v1beta/….
import { buffer } from 'node:stream/consumers';
import { jobOutputKey } from '../../shared/job-media.js';
import type {
  PollResult,
  ProviderAdapter,
  ProviderContext,
  ProviderOutput,
  ProviderRef,
  ProviderRequest,
  InputFile,
} from '../../activities/providers/types.js';
import { notConfirmed, ProviderError } from '../../activities/providers/types.js';
import type { AdapterModule } from '../../activities/providers/adapter-module.js';
import { defaultTimeoutMs, joinUrl, malformed, parseJson, providerFetch, readText, sameOrigin, type HttpCallOptions } from '../../activities/providers/http.js';
import { classify, errorOfRow, taskOutcome } from '../../activities/providers/error-table.js';
import { googleErrors, googleFacts, googleRetryDelayMs, googleRpcCodes } from './errors.js';
import {
  googleVeoAspectRatios,
  googleVeoDurations,
  googleVeoResolutions,
  type GoogleStatus,
  type GoogleVeoImage,
  type GoogleVeoOperation,
  type GoogleVeoParameters,
  type GoogleVeoPredictRequest,
} from './contract.js';
import { oneOf } from '../../activities/providers/body-check.js';

interface GoogleConfig {
  key: string;
  baseUrl: string;
  timeoutMs?: number;
}

interface GoogleRef {
  provider: 'google';
  jobId: string;
  operation: string;
}

/** The API origin from a base URL given with or without the `/v1beta` (or `/v1`) the SDKs include. */
function geminiOrigin(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/v1(beta)?$/, '');
}

/** An operation that ended with an error, classed by Google's table (providers/google/errors.ts). */
function operationFailure(err: GoogleStatus | undefined): PollResult | ProviderError {
  const status = typeof err?.status === 'string' && err.status ? err.status : typeof err?.code === 'number' ? googleRpcCodes[err.code] : undefined;
  const reason = `${typeof err?.message === 'string' ? err.message : 'no reason given'}${status ? ` (${status})` : ''}`;
  return taskOutcome(googleErrors, { code: status, reason, call: 'check' }, 'Google');
}

/** An HTTP error answer classed by Google's table, waiting the RetryInfo delay of a rate limit when it gives one. */
function googleHttpError(res: Response, text: string, o: HttpCallOptions, call: 'submit' | 'check' = 'submit'): ProviderError {
  const facts = googleFacts(res, text, call);
  return errorOfRow(classify(googleErrors, facts), facts, o, { retryAfterMs: googleRetryDelayMs(text) });
}

async function callJson<T>(url: string, init: RequestInit, o: HttpCallOptions, call: 'submit' | 'check'): Promise<T> {
  const res = await providerFetch(url, init, o);
  const text = await readText(res, o);
  if (!res.ok) throw googleHttpError(res, text, o, call);
  return parseJson<T>(text, o);
}

const byRole = (inputs: InputFile[], ...roles: InputFile['role'][]) => inputs.filter((i) => roles.includes(i.role));

/** imageToMldev: the image's bytes inline, base64, with its MIME type. */
async function inlineImage(f: InputFile, ctx: ProviderContext): Promise<GoogleVeoImage> {
  const bytes = await buffer(await ctx.storage.getStream(f.key));
  return { bytesBase64Encoded: bytes.toString('base64'), mimeType: f.contentType };
}

/**
 * The predictLongRunning body of a job. Inputs mean what they mean on the model's first route (fal.ts
 * videoFrames, catalog requestRefusal): start frame → `image`, end frame → `lastFrame`; reference
 * images → `referenceImages` (ASSET) where the model has a reference mode, else a lone reference is the
 * first frame.
 */
async function predictBody(req: ProviderRequest, ctx: ProviderContext): Promise<GoogleVeoPredictRequest> {
  const [start] = byRole(req.inputs, 'start_frame');
  const [end] = byRole(req.inputs, 'end_frame');
  const refs = byRole(req.inputs, 'reference', 'image');
  const referenceMode = !!req.route.secondaryModelIds?.reference;
  const first = start ?? (referenceMode ? undefined : refs[0]);
  if (!referenceMode && refs.length > 1)
    throw new ProviderError(`Google: ${req.model} takes at most one reference image (its first frame)`, { retryable: false });
  if (end && !first) throw new ProviderError(`Google: ${req.model} needs a first frame with an end frame`, { retryable: false });
  const instance: GoogleVeoPredictRequest['instances'][number] = { prompt: req.prompt ?? '' };
  if (first) instance.image = await inlineImage(first, ctx);
  if (end) instance.lastFrame = await inlineImage(end, ctx);
  if (referenceMode && refs.length) {
    instance.referenceImages = await Promise.all(refs.map(async (r) => ({ image: await inlineImage(r, ctx), referenceType: 'ASSET' as const })));
  }
  const parameters: GoogleVeoParameters = {
    aspectRatio: oneOf('Google', 'aspectRatio', googleVeoAspectRatios, req.aspectRatio ?? req.route.defaultAspectRatio),
    resolution: oneOf('Google', 'resolution', googleVeoResolutions, req.resolution ?? req.route.defaultResolution),
    durationSeconds: oneOf('Google', 'durationSeconds', googleVeoDurations, req.duration ?? req.route.defaultDuration),
  };
  return { instances: [instance], parameters };
}

export function createGoogleAdapter(cfg: GoogleConfig): ProviderAdapter {
  const timeoutMs = cfg.timeoutMs ?? defaultTimeoutMs;
  const base = geminiOrigin(cfg.baseUrl);
  const headers = { 'x-goog-api-key': cfg.key, accept: 'application/json' };
  const opts = (what: string, ctx: ProviderContext): HttpCallOptions => ({ provider: 'Google', what, timeoutMs, signal: ctx.signal, secrets: [cfg.key] });

  const refOf = (ref: ProviderRef): GoogleRef => {
    if (typeof ref.operation !== 'string' || !ref.operation) throw new ProviderError('Google: the stored provider ref is incomplete', { retryable: false });
    return ref as unknown as GoogleRef;
  };

  return {
    name: 'google',
    async submit(req, ctx) {
      if (req.route.kind !== 'video') throw new ProviderError(`Google serves only video models here, not ${req.model}`, { retryable: false });
      const alt = req.route.alternates?.find((a) => a.provider === 'google');
      const model = req.providerModelId ?? (req.route.provider === 'google' ? req.route.providerModelId : alt?.providerModelId);
      if (!model) throw new ProviderError(`${req.model} has no Google route in the catalog`, { retryable: false });
      const o = opts('video generation', ctx);
      const body = await predictBody(req, ctx);
      const op = await callJson<Partial<GoogleVeoOperation>>(
        joinUrl(base, `/v1beta/models/${encodeURIComponent(model)}:predictLongRunning`),
        { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) },
        o,
        'submit',
      );
      if (typeof op.name !== 'string' || !/^(models\/[^/]+\/)?operations\/[^/]+$/.test(op.name)) throw malformed(o, 'no operation name in the answer');
      const ref: GoogleRef = { provider: 'google', jobId: req.jobId, operation: op.name };
      return { ...ref };
    },

    async poll(ref, ctx): Promise<PollResult> {
      const { operation } = refOf(ref);
      const o = opts('status', ctx);
      const path = operation.split('/').map(encodeURIComponent).join('/');
      const op = await callJson<Partial<GoogleVeoOperation>>(joinUrl(base, `/v1beta/${path}`), { method: 'GET', headers }, o, 'check');
      if (op.done !== true) return { state: 'running' };
      if (op.error) {
        const failure = operationFailure(op.error);
        if (failure instanceof ProviderError) throw failure;
        return failure;
      }
      const answer = op.response?.generateVideoResponse;
      const samples = answer?.generatedSamples ?? [];
      if (samples.length === 0) {
        const reasons = answer?.raiMediaFilteredReasons?.filter((r) => typeof r === 'string') ?? [];
        if (reasons.length || (answer?.raiMediaFilteredCount ?? 0) > 0) {
          return {
            state: 'failed',
            message: `Google: the generated video was blocked by the provider's safety filters${reasons.length ? `: ${reasons.join('; ')}` : ''}`,
          };
        }
        throw malformed(o, 'a done operation without an error or a video');
      }
      const outputs: ProviderOutput[] = [];
      for (const [i, s] of samples.entries()) {
        const uri = s.video?.uri;
        if (typeof uri === 'string' && /^https?:\/\//.test(uri)) {
          outputs.push({ url: uri, contentType: 'video/mp4' });
          continue;
        }
        // videoFromMldev also reads the video inline (encodedVideo, encoding): stored here, so only its key travels on.
        const inline = s.video?.encodedVideo;
        if (typeof inline !== 'string' || !inline) throw malformed(o, 'a generated sample without a video uri or bytes');
        if (s.video?.encoding !== undefined && s.video.encoding !== 'video/mp4')
          throw malformed(o, `a generated sample of type ${String(s.video.encoding)}, not video/mp4`);
        const bytes = Buffer.from(inline, 'base64');
        const key = jobOutputKey(ctx.storage, ref.jobId as string, i + 1, 'mp4');
        const stored = await ctx.storage.putStream(key, bytes, 'video/mp4', bytes.length);
        outputs.push({ key, contentType: 'video/mp4', size: stored.size });
      }
      return { state: 'succeeded', percent: 100, outputs };
    },

    // No documented cancel for these operations: the workflow stops polling.
    async cancel() {
      return notConfirmed;
    },

    // The video uri is on the API's own origin and needs the key; a redirect elsewhere gets no header.
    outputHeaders: (output): Record<string, string> => (sameOrigin(output.url, base) ? { 'x-goog-api-key': cfg.key } : {}),
  };
}

export const createAdapter: AdapterModule['createAdapter'] = (c) => createGoogleAdapter({ key: c.GEMINI_API_KEY!, baseUrl: c.GEMINI_BASE_URL });

/** The route prober's lookup of a model (./probe.ts). */
export { modelLookup } from './probe.js';
