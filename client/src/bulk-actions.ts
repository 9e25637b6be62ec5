// mg.bulkActions: one cancel, retry or delete over many jobs, by the job lists' filters or by ids
// (docs/api/bulk-actions.md). The create answers a handle at once; the action is applied in the
// background, and `wait` polls GET with backoff until it completed.
import { MediaGenError } from './errors.js';
import type { BulkAction, BulkActionCreate, BulkActionsQuery, Page, RequestOptions, SendOptions } from './types.js';
import { query, sleep } from './util.js';

interface Requester {
  request<T>(method: string, path: string, opts?: SendOptions): Promise<T>;
}

export interface BulkActionWaitOptions {
  /** Milliseconds to wait at most: then the wait rejects with MediaGenError `timeout` (the action goes on). */
  timeout?: number;
  signal?: AbortSignal;
  /** Called with the record each time its counts moved. */
  onUpdate?: (action: BulkAction) => void;
  /** First polling interval (default 1 s); it grows ×1.5 up to `maxPollIntervalMs` (default 10 s) while nothing changes. */
  pollIntervalMs?: number;
  maxPollIntervalMs?: number;
}

const path = (id: string) => `/v1/bulk-actions/${encodeURIComponent(id)}`;

export const bulkActionsApi = (c: Requester) => {
  const get = (id: string, o?: RequestOptions) => c.request<Page<'get_bulk_actions_by_id'>>('GET', path(id), o);
  return {
    /** POST /v1/bulk-actions: `{ action, filter }` or `{ action, ids }`; answers the handle. Sends an Idempotency-Key. */
    create: (body: BulkActionCreate, o?: RequestOptions) => c.request<Page<'post_bulk_actions'>>('POST', '/v1/bulk-actions', { ...o, body, idempotent: true }),
    /** GET /v1/bulk-actions/{id}: its status and its jobs counted by outcome. */
    get,
    /** GET /v1/bulk-actions: the workspace's bulk actions, newest first. */
    list: (q?: BulkActionsQuery, o?: RequestOptions) => c.request<Page<'get_bulk_actions'>>('GET', `/v1/bulk-actions${query(q)}`, o),
    /** Resolves with the record once the action reached every job it took; polls GET with backoff. */
    async wait(id: string, opts: BulkActionWaitOptions = {}): Promise<BulkAction> {
      const deadline = opts.timeout === undefined ? Infinity : Date.now() + opts.timeout;
      let last = '';
      let interval = opts.pollIntervalMs ?? 1000;
      for (;;) {
        const a = (await get(id, { signal: opts.signal })).data;
        const key = JSON.stringify([a.status, a.counts]);
        const moved = key !== last;
        if (moved) opts.onUpdate?.(a);
        last = key;
        if (a.status !== 'running') return a;
        if (Date.now() + interval > deadline) {
          throw new MediaGenError({ status: 0, code: 'timeout', message: `bulk action ${id} did not complete within ${opts.timeout} ms (it goes on)` });
        }
        await sleep(interval, opts.signal);
        interval = moved ? (opts.pollIntervalMs ?? 1000) : Math.min(opts.maxPollIntervalMs ?? 10_000, Math.ceil(interval * 1.5));
      }
    },
  };
};
