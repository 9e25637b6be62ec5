// Google Gemini API video adapter (Veo 3.1; ai.google.dev/gemini-api/docs/video, contracts/google.ts):
// POST {base}/v1beta/models/{model}:predictLongRunning with `x-goog-api-key` and { instances: [{ prompt
// }], parameters: { aspectRatio, resolution } } → an Operation { name }; GET {base}/v1beta/{name} until
// `done: true`, then either `error: { code, message, status }` or
// `response.generateVideoResponse.generatedSamples[].video.uri`, which is downloaded with the same key
// header (outputHeaders: sent to the API's origin only, never after a redirect elsewhere). veo-3.1 is
// served by fal first (catalog.ts); this is its second route, text-to-video at 8 s only. Google
// documents no cancel for these operations: cancel is a no-op, the workflow stops polling.
// GEMINI_BASE_URL may carry the `/v1beta` of the SDKs' base URL: it is dropped, so paths are never
// /v1beta/v1beta/….
import type { PollResult, ProviderAdapter, ProviderContext, ProviderOutput, ProviderRef } from './types.js';
import { ProviderError } from './types.js';
import { defaultTimeoutMs, errorFromResponse, joinUrl, malformed, parseJson, providerFetch, providerReason, readText, sameOrigin, scrub, type HttpCallOptions } from './http.js';
import type { GoogleStatus, GoogleVeoOperation, GoogleVeoPredictRequest } from './contracts/google.js';

export interface GoogleConfig {
  key: string;
  baseUrl: string;
  timeoutMs?: number;
}

export interface GoogleRef {
  provider: 'google';
  jobId: string;
  operation: string;
}

/** The API origin from a base URL given with or without the `/v1beta` (or `/v1`) the SDKs include. */
export function geminiOrigin(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/v1(beta)?$/, '');
}

/** An operation's error: 5xx-like codes and RESOURCE_EXHAUSTED are the provider's; the rest are the request's. */
function operationFailure(err: GoogleStatus | undefined): PollResult | ProviderError {
  const code = typeof err?.code === 'number' ? err.code : undefined;
  const status = typeof err?.status === 'string' ? err.status : '';
  const reason = `${typeof err?.message === 'string' ? err.message : 'no reason given'}${status ? ` (${status})` : ''}`;
  // google.rpc.Code: 8 RESOURCE_EXHAUSTED (quota), 13 INTERNAL, 14 UNAVAILABLE, 4 DEADLINE_EXCEEDED.
  if (code === 8 || status === 'RESOURCE_EXHAUSTED') return new ProviderError(`Google: the account's quota is exhausted: ${reason}`, { retryable: false, account: true, status: 429 });
  if (code === 7 || code === 16 || status === 'PERMISSION_DENIED' || status === 'UNAUTHENTICATED') {
    return new ProviderError(`Google: the provider refused our credentials: ${reason}`, { retryable: false, account: true, status: 403 });
  }
  if (code === 13 || code === 14 || code === 4 || status === 'INTERNAL' || status === 'UNAVAILABLE' || status === 'DEADLINE_EXCEEDED') {
    return new ProviderError(`Google: provider error: ${reason}`, { retryable: true, status: 503 });
  }
  return { state: 'failed', message: `Google: generation failed: ${reason}` };
}

/**
 * An HTTP error answer as http.ts maps it, except Google's 429 RESOURCE_EXHAUSTED naming the quota
 * ("You exceeded your current quota, please check your plan and billing details"): our account's
 * limit, which waiting out a retry does not lift, so another route serves the job.
 */
export function googleHttpError(res: Response, text: string, o: HttpCallOptions): ProviderError {
  if (res.status === 429 && /quota/i.test(text)) {
    const reason = scrub(providerReason(text), o.secrets);
    return new ProviderError(`${o.provider} ${o.what}: the provider account's quota is exhausted (HTTP 429); check its plan and billing${reason ? `: ${reason}` : ''}`, { retryable: false, status: 429, account: true });
  }
  return errorFromResponse(res, text, o);
}

async function callJson<T>(url: string, init: RequestInit, o: HttpCallOptions): Promise<T> {
  const res = await providerFetch(url, init, o);
  const text = await readText(res, o);
  if (!res.ok) throw googleHttpError(res, text, o);
  return parseJson<T>(text, o);
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
      // The create-time check (catalog accepts) keeps these jobs off this route; refuse rather than drop inputs.
      if (req.inputs.length > 0) throw new ProviderError(`Google: ${req.model} is text-to-video only on this route; the job has image inputs`, { retryable: false });
      const o = opts('video generation', ctx);
      const body: GoogleVeoPredictRequest = {
        instances: [{ prompt: req.prompt ?? '' }],
        parameters: {
          aspectRatio: (req.aspectRatio ?? req.route.defaultAspectRatio) as '16:9' | '9:16',
          resolution: (req.resolution ?? req.route.defaultResolution) as '720p' | '1080p',
        },
      };
      const op = await callJson<Partial<GoogleVeoOperation>>(
        joinUrl(base, `/v1beta/models/${encodeURIComponent(model)}:predictLongRunning`),
        { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) },
        o,
      );
      if (typeof op.name !== 'string' || !/^(models\/[^/]+\/)?operations\/[^/]+$/.test(op.name)) throw malformed(o, 'no operation name in the answer');
      const ref: GoogleRef = { provider: 'google', jobId: req.jobId, operation: op.name };
      return { ...ref };
    },

    async poll(ref, ctx): Promise<PollResult> {
      const { operation } = refOf(ref);
      const o = opts('status', ctx);
      const path = operation.split('/').map(encodeURIComponent).join('/');
      const op = await callJson<Partial<GoogleVeoOperation>>(joinUrl(base, `/v1beta/${path}`), { method: 'GET', headers }, o);
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
          return { state: 'failed', message: `Google: the generated video was blocked by the provider's safety filters${reasons.length ? `: ${reasons.join('; ')}` : ''}` };
        }
        throw malformed(o, 'a done operation without an error or a video');
      }
      const outputs: ProviderOutput[] = samples.map((s) => {
        const uri = s.video?.uri;
        if (typeof uri !== 'string' || !/^https?:\/\//.test(uri)) throw malformed(o, 'a generated sample without a video uri');
        return { url: uri, contentType: 'video/mp4' };
      });
      return { state: 'succeeded', percent: 100, outputs };
    },

    // No documented cancel for these operations: the workflow stops polling.
    async cancel() {},

    // The video uri is on the API's own origin and needs the key; a redirect elsewhere gets no header.
    outputHeaders: (output): Record<string, string> => (sameOrigin(output.url, base) ? { 'x-goog-api-key': cfg.key } : {}),
  };
}
