// fal.ai queue API adapter (fal.ai/docs: Queue API). Submit: POST {queue}/{endpoint_id} with
// `Authorization: Key <FAL_KEY>` → { request_id, status_url, response_url, cancel_url }. Status:
// GET …/requests/{id}/status?logs=1 → IN_QUEUE (queue_position) | IN_PROGRESS | COMPLETED. Result:
// GET …/requests/{id}. Cancel: PUT …/requests/{id}/cancel → CANCELLATION_REQUESTED | ALREADY_COMPLETED.
//
// The queue documents no idempotency key, so submitting once is the pipeline's job: the provider
// step records the ref returned by submit (on the job row and in its heartbeat) before anything
// else can fail, and a retry that finds it polls it instead of calling submit again
// (activities/jobs/submit.ts submitAndCheck).
//
// Every submit asks fal to keep the output files for `outputLifetimeSeconds` (header
// X-Fal-Object-Lifecycle-Preference) so they outlive our copy; accounts whose CDN requires the key
// (`cdnRequiresKey`) get `Authorization: Key …` on output downloads from fal's own CDN hosts only.
// Request bodies are built against fal's input types (providers/fal/contract.ts) with `satisfies`.
import type { CancelOutcome, PollResult, ProviderAdapter, ProviderContext, ProviderOutput, ProviderRef } from '../../activities/providers/types.js';
import { notConfirmed, ProviderError } from '../../activities/providers/types.js';
import {
  defaultTimeoutMs,
  errorFromResponse,
  joinUrl,
  malformed,
  providerFetch,
  readText,
  parseJson,
  sameOrigin,
  type HttpCallOptions,
} from '../../activities/providers/http.js';
import { falRequestFor } from './requests.js';
import { classify, errorOfRow } from '../../activities/providers/error-table.js';
import { falErrors, falFacts } from './errors.js';
import { conformActorImage, conformMotionVideo } from '../../activities/providers/conform.js';
import { mediaToolsFrom, type MediaTools } from '../../activities/providers/media-tools.js';
import { hostMatches } from '../../activities/providers/hosts.js';
import { fal } from './descriptor.js';
import type { AdapterModule, ProvidersConfig } from '../../activities/providers/adapter-module.js';
import { setTimeout as sleep } from 'node:timers/promises';

// The request builders live in ./fal-requests.ts.
export { falRequestFor, seedreamImageSize } from './requests.js';

interface FalConfig {
  key: string;
  queueUrl: string;
  timeoutMs?: number;
  /** How long fal keeps output files (X-Fal-Object-Lifecycle-Preference); default one day. */
  outputLifetimeSeconds?: number;
  /** The account's CDN serves outputs only with the key (fal "private" media). */
  cdnRequiresKey?: boolean;
  /** ffmpeg and its caps, to conform replace-actor motion videos (conform.ts). */
  media?: MediaTools;
  /** Result-call retries; default fal-js's (falResultRetry). */
  resultRetry?: FalResultRetry;
}

/**
 * The result call is retried as fal's own client retries it (fal-js queue.ts, QUEUE_RETRY_CONFIG:
 * statuses 429, 502, 503 and 504, 3 retries, backoff from 1 s doubling, ±25% jitter). What an error
 * answer then means is fal's table (providers/fal/errors.ts): an infrastructure failure (a 5xx, or an
 * `X-Fal-Error-Type` / `error_type` fal documents as one) stays a retryable error, so the activity asks
 * again and the job moves to its next route once the failover budget is spent; an unmarked edge
 * 502/503/504 never gives up a paid generation; the request's own failure (validation, content
 * policy) is final.
 */
interface FalResultRetry {
  maxRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

/** fal-js retries the result call on these statuses (retry.ts DEFAULT_RETRYABLE_STATUS_CODES). */
export const falResultRetryStatuses: readonly number[] = [429, 502, 503, 504];
/** fal-js queue.ts QUEUE_RETRY_CONFIG. */
export const falResultRetry: FalResultRetry = { maxRetries: 3, baseDelayMs: 1000, maxDelayMs: 60_000 };

export { falErrorType } from './errors.js';

/** fal-js's backoff: base × 2^attempt, capped, ±25% jitter. */
function resultBackoffMs(attempt: number, r: FalResultRetry): number {
  const d = Math.min(r.baseDelayMs * 2 ** attempt, r.maxDelayMs);
  return Math.max(0, d + 0.25 * d * (Math.random() * 2 - 1));
}

interface FalRef {
  provider: 'fal';
  jobId: string;
  endpointId: string;
  requestId: string;
  statusUrl: string;
  responseUrl: string;
  cancelUrl: string;
}

interface FalQueueClient {
  submit(endpointId: string, input: Record<string, unknown>, jobId: string, ctx: ProviderContext): Promise<FalRef>;
  poll(ref: FalRef, ctx: ProviderContext): Promise<PollResult>;
  cancel(ref: FalRef, ctx: ProviderContext): Promise<CancelOutcome>;
}

function createFalQueueClient(cfg: FalConfig): FalQueueClient {
  const timeoutMs = cfg.timeoutMs ?? defaultTimeoutMs;
  const headers = { authorization: `Key ${cfg.key}`, accept: 'application/json' };
  const lifecycle = JSON.stringify({ expiration_duration_seconds: cfg.outputLifetimeSeconds ?? 86_400 });
  const opts = (what: string, ctx: ProviderContext): HttpCallOptions => ({ provider: 'fal', what, timeoutMs, signal: ctx.signal, secrets: [cfg.key] });

  // Status and result live under the app id (owner/app) without the endpoint's sub-path.
  const requestBase = (endpointId: string, requestId: string) => {
    const app = endpointId.split('/').slice(0, 2).join('/');
    return joinUrl(cfg.queueUrl, `${app}/requests/${encodeURIComponent(requestId)}`);
  };

  return {
    async submit(endpointId, input, jobId, ctx) {
      const o = opts(`submit to ${endpointId}`, ctx);
      const body = await falJson(
        joinUrl(cfg.queueUrl, endpointId),
        {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', 'x-fal-object-lifecycle-preference': lifecycle },
          body: JSON.stringify(input),
        },
        o,
        'submit',
      );
      const requestId = body.request_id;
      if (typeof requestId !== 'string' || !requestId) throw malformed(o, 'no request_id in the submit answer');
      const base = requestBase(endpointId, requestId);
      // Follow the URLs fal returns only when they point at the configured queue (our key goes with them).
      const pick = (u: unknown, fallback: string) => (sameOrigin(u, cfg.queueUrl) ? u : fallback);
      return {
        provider: 'fal',
        jobId,
        endpointId,
        requestId,
        statusUrl: pick(body.status_url, `${base}/status`),
        responseUrl: pick(body.response_url, base),
        cancelUrl: pick(body.cancel_url, `${base}/cancel`),
      };
    },

    async poll(ref, ctx) {
      const o = opts('status', ctx);
      const statusUrl = new URL(ref.statusUrl);
      statusUrl.searchParams.set('logs', '1');
      const body = await falJson(statusUrl.toString(), { method: 'GET', headers }, o, 'check');
      switch (body.status) {
        case 'IN_QUEUE':
          return { state: 'queued', queuePosition: typeof body.queue_position === 'number' ? body.queue_position : undefined };
        case 'IN_PROGRESS':
          return { state: 'running', percent: percentFromLogs(body.logs) };
        case 'COMPLETED':
          if (body.error) return completedWithError(body.error, body.error_type);
          return fetchResult(ref, ctx);
        case 'FAILED':
        case 'CANCELED':
        case 'CANCELLED':
          return {
            state: 'failed',
            message: `fal: request ${String(body.status).toLowerCase()}${body.error ? `: ${describeFalError(body.error, body.error_type)}` : ''}`,
          };
        default:
          throw malformed(o, `unknown status ${JSON.stringify(body.status ?? null)}`);
      }
    },

    async cancel(ref, ctx) {
      // fal's Queue API "Cancel a request" (fal.ai/docs/inference-api/queue/cancel, read 2026-12-02):
      // a request still in the queue is removed (never run, never billed); one in progress only gets a
      // cancellation signal sent to its runner, and the model app decides whether to stop, so the 202
      // CANCELLATION_REQUESTED is the same answer for a request that runs on and is billed. The cancel is
      // confirmed only for a request seen queued just before it (or whose status says it was
      // cancelled); a running one is best effort, and the refund follows the cancel policy.
      const o = opts('cancel', ctx);
      const seen = await falStatusOf(ref, ctx);
      const res = await providerFetch(ref.cancelUrl, { method: 'PUT', headers }, o);
      const text = await readText(res, o);
      if (res.ok) return { confirmed: seen === 'IN_QUEUE' || seen === 'CANCELLED' || seen === 'CANCELED' };
      if (res.status === 404) return notConfirmed;
      // 400 { status: "ALREADY_COMPLETED" }: nothing left to stop.
      if (res.status === 400 && /ALREADY_COMPLETED|NOT_FOUND/.test(text)) return notConfirmed;
      throw errorFromResponse(res, text, o);
    },
  };

  /** The request's status as fal answers it (IN_QUEUE, IN_PROGRESS, COMPLETED…), or undefined when the check failed: a cancel then confirms nothing. */
  async function falStatusOf(ref: FalRef, ctx: ProviderContext): Promise<string | undefined> {
    try {
      const body = await falJson(ref.statusUrl, { method: 'GET', headers }, opts('status before cancel', ctx), 'check');
      return typeof body.status === 'string' ? body.status : undefined;
    } catch {
      return undefined;
    }
  }

  /** A JSON call whose error answers are classed by fal's table. */
  async function falJson(url: string, init: RequestInit, o: HttpCallOptions, call: 'submit' | 'check'): Promise<Record<string, unknown>> {
    const res = await providerFetch(url, init, o);
    const text = await readText(res, o);
    if (!res.ok) {
      const facts = falFacts(res, text, call);
      throw errorOfRow(classify(falErrors, facts), facts, o);
    }
    return parseJson<Record<string, unknown>>(text, o);
  }

  async function fetchResult(ref: FalRef, ctx: ProviderContext): Promise<PollResult> {
    const o = opts('result', ctx);
    const retry = cfg.resultRetry ?? falResultRetry;
    for (let attempt = 0; ; attempt++) {
      const res = await providerFetch(ref.responseUrl, { method: 'GET', headers }, o);
      const text = await readText(res, o);
      if (res.ok) {
        const outputs = outputsOf(parseJson<Record<string, unknown>>(text, o));
        if (!outputs.length) throw malformed(o, 'the result holds no image, video or audio file');
        return { state: 'succeeded', percent: 100, outputs };
      }
      const facts = falFacts(res, text, 'check');
      const row = classify(falErrors, facts);
      const err = errorOfRow(row, facts, o);
      if (row.class !== 'retry' && row.class !== 'failover') {
        // The request's own failure: validation, content policy.
        const type = facts.code;
        return { state: 'failed', message: type && !err.message.includes(type) ? `${err.message} (${type})` : err.message };
      }
      // fal-js retries these whatever the type; an unmarked one is fal's edge, the rest the request's run.
      if (row.class === 'failover' || !falResultRetryStatuses.includes(res.status)) throw err;
      if (attempt >= retry.maxRetries) throw err;
      await sleep(resultBackoffMs(attempt, retry), undefined, { signal: ctx.signal });
    }
  }
}

/**
 * A COMPLETED status carrying the run's error: an infrastructure failure is retried then moved to
 * another route (the request ended unbilled); any other is the request's own, final.
 */
function completedWithError(error: unknown, type: unknown): PollResult {
  const code = typeof type === 'string' && type ? type : undefined;
  const facts = { code, reason: describeFalError(error, undefined), call: 'check' as const };
  const row = classify(falErrors, facts);
  if (row.class === 'retry' || row.class === 'failover') throw errorOfRow(row, facts, { prefix: 'fal status' }, { ended: true });
  return { state: 'failed', message: `fal: ${describeFalError(error, type)}` };
}

function describeFalError(error: unknown, type: unknown): string {
  const msg = typeof error === 'string' ? error : JSON.stringify(error);
  return typeof type === 'string' ? `${msg} (${type})` : msg;
}

function percentFromLogs(logs: unknown): number | undefined {
  if (!Array.isArray(logs)) return undefined;
  for (let i = logs.length - 1; i >= 0; i--) {
    const m = /(\d{1,3}(?:\.\d+)?)\s*%/.exec(String((logs[i] as { message?: unknown })?.message ?? ''));
    if (m) return Math.min(100, Math.max(0, Number(m[1])));
  }
  return undefined;
}

/** Files in a fal result: `images[]`, `image`, `video`, `videos[]`, `audio` — each `{ url, content_type, file_size }`. */
function outputsOf(result: Record<string, unknown>): ProviderOutput[] {
  const files: unknown[] = [];
  for (const k of ['images', 'videos']) if (Array.isArray(result[k])) files.push(...(result[k] as unknown[]));
  for (const k of ['video', 'image', 'audio']) if (result[k] && typeof result[k] === 'object') files.push(result[k]);
  const out: ProviderOutput[] = [];
  for (const f of files) {
    const file = f as { url?: unknown; content_type?: unknown; file_size?: unknown };
    if (typeof file.url !== 'string' || !/^https?:\/\//.test(file.url)) continue;
    out.push({
      url: file.url,
      contentType: typeof file.content_type === 'string' ? file.content_type : undefined,
      size: typeof file.file_size === 'number' ? file.file_size : undefined,
    });
  }
  return out;
}

function isFalRef(ref: unknown): ref is FalRef {
  const r = ref as Partial<FalRef> | null;
  return !!r && typeof r.requestId === 'string' && typeof r.statusUrl === 'string' && typeof r.responseUrl === 'string' && typeof r.cancelUrl === 'string';
}

/** The adapter serving the models hosted on fal (a talking actor's lipsync after its speech step). */
export function createFalAdapter(cfg: FalConfig): ProviderAdapter {
  const queue = createFalQueueClient(cfg);
  const refOf = (ref: ProviderRef): FalRef => {
    if (!isFalRef(ref)) throw new ProviderError('fal: the stored provider ref is incomplete', { retryable: false });
    return ref;
  };
  return {
    name: 'fal',
    async submit(req, ctx) {
      // Wan follows its motion video: trim/pad and crop it to the asked duration and aspect ratio first.
      const motion = req.kind === 'replace_actor' ? req.inputs.find((i) => i.role === 'video') : undefined;
      if (motion) {
        const conformed = await conformMotionVideo(req, motion, ctx, cfg.media);
        req = { ...req, inputs: req.inputs.map((i) => (i === motion ? conformed : i)) };
      }
      // InfiniteTalk keeps its image's shape: the actor's image is cropped to the asked aspect ratio first.
      const actor = req.kind === 'talking_actor' ? req.inputs.find((i) => i.role === 'actor_image' || i.role === 'image') : undefined;
      if (actor) {
        const conformed = await conformActorImage(req, actor, ctx, cfg.media);
        req = { ...req, inputs: req.inputs.map((i) => (i === actor ? conformed : i)) };
      }
      const { endpointId, input } = await falRequestFor(req, ctx);
      return { ...(await queue.submit(endpointId, input, req.jobId, ctx)) };
    },
    poll: (ref, ctx) => queue.poll(refOf(ref), ctx),
    cancel: (ref, ctx) => queue.cancel(refOf(ref), ctx),
    outputHeaders: (output) => falOutputHeaders(cfg, output),
  };
}

/** The key goes with an output download only when the account's CDN requires it, and only to fal's key-bearing CDN hosts. */
export function falOutputHeaders(cfg: Pick<FalConfig, 'key' | 'cdnRequiresKey'>, output: ProviderOutput): Record<string, string> {
  if (!cfg.cdnRequiresKey || !output.url) return {};
  try {
    const u = new URL(output.url);
    return u.protocol === 'https:' && hostMatches(u.hostname, fal.outputHosts.keyHosts) ? { authorization: `Key ${cfg.key}` } : {};
  } catch {
    return {};
  }
}

/** fal's adapter settings from configuration. */
const falConfigFrom = (c: ProvidersConfig): FalConfig => ({
  key: c.FAL_KEY!,
  queueUrl: c.FAL_QUEUE_URL,
  cdnRequiresKey: c.FAL_CDN_REQUIRES_KEY ?? false,
  media: mediaToolsFrom(c),
});

export const createAdapter: AdapterModule['createAdapter'] = (c) => createFalAdapter(falConfigFrom(c));

/** The route prober's lookup of a model (./probe.ts). */
export { modelLookup } from './probe.js';
