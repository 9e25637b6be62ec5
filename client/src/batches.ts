// mg.batches: many job creates submitted as one (docs/api/batches.md), each item at priority low,
// one batch.completed and a manifest when every item ended. Each method is one request, but for
// `wait`, which polls GET with backoff until the batch ended.
import { MediaGenError } from './errors.js';
import type { Batch, BatchCreate, BatchesQuery, Page, RequestOptions, SendOptions } from './types.js';
import { query, sleep } from './util.js';

interface Requester {
  request<T>(method: string, path: string, opts?: SendOptions): Promise<T>;
  send(method: string, path: string, opts?: SendOptions): Promise<Response>;
}

export interface BatchWaitOptions {
  /** Milliseconds to wait at most: then the wait rejects with MediaGenError `timeout` (the batch goes on). */
  timeout?: number;
  signal?: AbortSignal;
  /** Called with the record each time its counts moved. */
  onUpdate?: (batch: Batch) => void;
  /** First polling interval (default 1 s); it grows ×1.5 up to `maxPollIntervalMs` (default 10 s) while nothing changes. */
  pollIntervalMs?: number;
  maxPollIntervalMs?: number;
}

const path = (id: string, rest = '') => `/v1/batches/${encodeURIComponent(id)}${rest}`;

export const batchesApi = (c: Requester) => {
  const get = (id: string, o?: RequestOptions) => c.request<Page<'get_batches_by_id'>>('GET', path(id), o);
  return {
    /** POST /v1/batches: many job creates as one, validated whole (`?dry_run=true`: the quote). Sends an Idempotency-Key. */
    create: (body: BatchCreate, o?: RequestOptions & { dryRun?: boolean }) =>
      c.request<Page<'post_batches'>>('POST', `/v1/batches${o?.dryRun ? '?dry_run=true' : ''}`, { ...o, body, idempotent: true }),
    /** GET /v1/batches/{id}: its status and its items counted by status. */
    get,
    /** GET /v1/batches: the workspace's batches, newest first. */
    list: (q?: BatchesQuery, o?: RequestOptions) => c.request<Page<'get_batches'>>('GET', `/v1/batches${query(q)}`, o),
    /** POST /v1/batches/{id}/cancel: the items not started are canceled, never charged. */
    cancel: (id: string, o?: RequestOptions) => c.request<Page<'post_batches_by_id_cancel'>>('POST', path(id, '/cancel'), o),
    /** POST /v1/batches/{id}/retry: the failed items run again, each as a new job. */
    retry: (id: string, o?: RequestOptions) => c.request<Page<'post_batches_by_id_retry'>>('POST', path(id, '/retry'), o),
    /** GET /v1/batches/{id}/manifest: one row per item (JSON), once every item ended. */
    manifest: (id: string, o?: RequestOptions) => c.request<Page<'get_batches_by_id_manifest'>>('GET', path(id, '/manifest'), o),
    /** The manifest as text: `jsonl` (one row a line) or `csv` (RFC 4180, a header row). */
    async manifestText(id: string, format: 'jsonl' | 'csv', o: RequestOptions = {}): Promise<string> {
      const res = await c.send('GET', path(id, '/manifest'), { ...o, accept: format === 'csv' ? 'text/csv' : 'application/jsonl' });
      return res.text();
    },
    /** Resolves with the record once the batch ended (`completed` or `canceled`); polls GET with backoff. */
    async wait(id: string, opts: BatchWaitOptions = {}): Promise<Batch> {
      const deadline = opts.timeout === undefined ? Infinity : Date.now() + opts.timeout;
      let last = '';
      let interval = opts.pollIntervalMs ?? 1000;
      for (;;) {
        const b = (await get(id, { signal: opts.signal })).data;
        const key = JSON.stringify([b.status, b.counts]);
        const moved = key !== last;
        if (moved) opts.onUpdate?.(b);
        last = key;
        if (b.status !== 'running') return b;
        if (Date.now() + interval > deadline) {
          throw new MediaGenError({ status: 0, code: 'timeout', message: `batch ${id} did not end within ${opts.timeout} ms (it goes on)` });
        }
        await sleep(interval, opts.signal);
        interval = moved ? (opts.pollIntervalMs ?? 1000) : Math.min(opts.maxPollIntervalMs ?? 10_000, Math.ceil(interval * 1.5));
      }
    },
  };
};
