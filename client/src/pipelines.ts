// mg.pipelines: several job creates run in order as one durable job (docs/api/pipelines.md). Each
// method is one request, but for `events` (the live stream, GET /v1/pipelines/{id}/events) and
// `wait`, which follows that stream to the pipeline's end and falls back to polling GET where the
// gateway has no stream, as waitForJob does for a job.
import { MediaGenError } from './errors.js';
import { followEvents, statusEvents, terminal } from './events.js';
import type { EventsOptions, Page, Pipeline, PipelineCreate, PipelineResume, PipelinesQuery, RequestOptions, SendOptions } from './types.js';
import { query, sleep } from './util.js';

interface Requester {
  request<T>(method: string, path: string, opts?: SendOptions): Promise<T>;
  send(method: string, path: string, opts?: SendOptions): Promise<Response>;
}

/** One `status` event of a pipeline's event stream. */
export interface PipelineEvent {
  /** The event id (the pipeline's change counter), for `lastEventId` on reconnect. */
  id: string | null;
  pipeline: Pipeline;
}

export interface PipelineWaitOptions {
  /** Milliseconds to wait at most: then the wait rejects with MediaGenError `timeout` (the pipeline goes on). */
  timeout?: number;
  signal?: AbortSignal;
  /** Called with each new state of the pipeline (a step's status or progress moved, a step completed, …). */
  onUpdate?: (pipeline: Pipeline) => void;
  /** First polling interval where the gateway has no event stream (default 500 ms); it grows ×1.5 up to `maxPollIntervalMs` while nothing changes. */
  pollIntervalMs?: number;
  maxPollIntervalMs?: number;
  /** Use the live event stream when the gateway offers it (default true). */
  events?: boolean;
}

const path = (id: string, rest = '') => `/v1/pipelines/${encodeURIComponent(id)}${rest}`;

/** A signal that aborts with `signal` or, after `timeoutMs`, with a `timeout` MediaGenError; `done` clears the timer. */
function withTimeout(id: string, signal: AbortSignal | undefined, timeoutMs: number | undefined): { signal: AbortSignal | undefined; done(): void } {
  if (timeoutMs === undefined) return { signal, done: () => undefined };
  const ctrl = new AbortController();
  const onAbort = () => ctrl.abort(signal!.reason);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(
    () => ctrl.abort(new MediaGenError({ status: 0, code: 'timeout', message: `pipeline ${id} did not end within ${timeoutMs} ms (it goes on)` })),
    timeoutMs,
  );
  return {
    signal: ctrl.signal,
    done: () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    },
  };
}

export const pipelinesApi = (c: Requester) => {
  /** Set once the gateway answered 404/405 for a pipeline's event stream: poll from then on. */
  let eventsUnsupported = false;

  async function* events(id: string, o: EventsOptions = {}): AsyncGenerator<PipelineEvent> {
    const headers: Record<string, string> = o.lastEventId ? { 'last-event-id': o.lastEventId } : {};
    const res = await c.send('GET', path(id, '/events'), { signal: o.signal, headers, accept: 'text/event-stream' });
    for await (const ev of statusEvents<Pipeline>(res, 'pipeline')) yield { id: ev.id, pipeline: ev.job };
  }

  const get = (id: string, o?: RequestOptions) => c.request<Page<'get_pipelines_by_id'>>('GET', path(id), o);

  return {
    /** POST /v1/pipelines: several job creates run in order as one durable job (`?dry_run=true`: the quote). Sends an Idempotency-Key. */
    create: (body: PipelineCreate, o?: RequestOptions & { dryRun?: boolean }) =>
      c.request<Page<'post_pipelines'>>('POST', `/v1/pipelines${o?.dryRun ? '?dry_run=true' : ''}`, { ...o, body, idempotent: true }),
    /** GET /v1/pipelines/{id}: its status, and each step's job, progress, outputs and charges. */
    get,
    /** GET /v1/pipelines: the workspace's pipelines, newest first. */
    list: (q?: PipelinesQuery, o?: RequestOptions) => c.request<Page<'get_pipelines'>>('GET', `/v1/pipelines${query(q)}`, o),
    /** POST /v1/pipelines/{id}/cancel: cancels the running step's job; no later step starts. */
    cancel: (id: string, o?: RequestOptions) => c.request<Page<'post_pipelines_by_id_cancel'>>('POST', path(id, '/cancel'), o),
    /** POST /v1/pipelines/{id}/resume: runs the failed step again (optionally with a new body), then the rest. */
    resume: (id: string, body: PipelineResume = {}, o?: RequestOptions) =>
      c.request<Page<'post_pipelines_by_id_resume'>>('POST', path(id, '/resume'), { ...o, body }),
    /** GET /v1/pipelines/{id}/receipt: each step's charges and refunds, by job. */
    receipt: (id: string, o?: RequestOptions) => c.request<Page<'get_pipelines_by_id_receipt'>>('GET', path(id, '/receipt'), o),
    /**
     * One connection to GET /v1/pipelines/{id}/events: yields `{ id, pipeline }` for each `status`
     * event (the record GET answers) and returns when the stream ends (after the event of a completed
     * or failed pipeline, or when the connection drops: pass the last `id` as `lastEventId` to resume
     * without replays). Throws MediaGenError 404 where the gateway has no such stream.
     */
    events,
    /**
     * Resolves with the pipeline's record once it is `completed` or `failed` (check `status`; a failed
     * one names its error and failed step, and may be resumed). Follows the live event stream where the
     * gateway offers it (resuming with Last-Event-ID when it drops), else polls GET with backoff.
     * Rejects with MediaGenError `timeout` after `timeout` ms, or with the signal's reason.
     */
    async wait(id: string, opts: PipelineWaitOptions = {}): Promise<Pipeline> {
      const { signal, done } = withTimeout(id, opts.signal, opts.timeout);
      let last = '';
      const seen = (p: Pipeline) => {
        // updated_at and the presigned URLs move on their own: a change is in the statuses, progress, outputs or charges.
        const key = JSON.stringify([
          p.status,
          p.error,
          p.charged,
          p.steps.map((s) => [s.status, s.job_id, s.progress, s.outputs.length, s.charged, s.refunded]),
        ]);
        if (key === last) return false;
        last = key;
        opts.onUpdate?.(p);
        return true;
      };
      try {
        let p = (await get(id, { signal })).data;
        seen(p);
        if (!terminal.has(p.status) && opts.events !== false && !eventsUnsupported) {
          const followed = await followEvents<Pipeline>(
            async function* (o) {
              for await (const ev of events(id, o)) yield { id: ev.id, job: ev.pipeline };
            },
            seen,
            signal,
          );
          if (followed === 'unsupported') eventsUnsupported = true;
          else p = followed ?? p;
        }
        let interval = opts.pollIntervalMs ?? 500;
        while (!terminal.has(p.status)) {
          await sleep(interval, signal);
          p = (await get(id, { signal })).data;
          interval = seen(p) ? (opts.pollIntervalMs ?? 500) : Math.min(opts.maxPollIntervalMs ?? 5000, Math.ceil(interval * 1.5));
        }
        return p;
      } finally {
        done();
      }
    },
  };
};
