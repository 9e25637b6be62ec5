// `client.events`: the workspace's event log (GET /v1/events, docs/api/events.md). Every status move
// of a job, every pipeline event, budget alert and balance.low crossing, numbered per workspace
// (`seq`) gap-free in commit order; each event's `id` is the `webhook-id` of its webhook delivery,
// so a receiver that missed deliveries applies what it lacks by id. `iterate` pages through the log
// following `after`; `follow` reads the SSE stream and reconnects with Last-Event-ID (any replica).
// No Node built-ins, like the client.
import type { operations } from './openapi.js';
import { MediaGenError } from './errors.js';
import { readEvents } from './sse.js';
import type { Page, RequestOptions, SendOptions } from './types.js';
import { query, sleep } from './util.js';

type QueryOf<Op> = Op extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

/** GET /v1/events: `after` (the last seq seen), `types` (comma-separated, `job.*` for a family) and `limit`. */
export type WorkspaceEventsQuery = QueryOf<operations['get_events']>;
/** One event of the log: id (= webhook-id), seq, type, subject_id, created_at and the webhook body's data. */
export type WorkspaceEvent = Page<'get_events'>['data'][number];

interface Requester {
  request<T>(method: string, path: string, opts?: SendOptions): Promise<T>;
  send(method: string, path: string, opts?: SendOptions): Promise<Response>;
}

export interface FollowOptions {
  /** Only these types (`job.completed`) or families (`job.*`), as the `types` query. */
  types?: string;
  /** Start after this seq (0: from the oldest event kept). */
  after?: number;
  signal?: AbortSignal;
}

export function workspaceEventsApi(client: Requester) {
  const list = (q?: WorkspaceEventsQuery, o?: RequestOptions) => client.request<Page<'get_events'>>('GET', `/v1/events${query(q)}`, o);

  /** One connection to GET /v1/events/stream from `lastEventId` (a seq); ends when the connection does. */
  async function* stream(o: FollowOptions & { lastEventId?: string }): AsyncGenerator<WorkspaceEvent> {
    const res = await client.send('GET', `/v1/events/stream${query({ types: o.types, after: o.lastEventId ? undefined : o.after })}`, {
      signal: o.signal,
      headers: o.lastEventId ? { 'last-event-id': o.lastEventId } : {},
      accept: 'text/event-stream',
    });
    if (!res.body || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
      await res.body?.cancel();
      throw new MediaGenError({
        status: res.status,
        code: 'invalid_response',
        message: 'the gateway did not answer GET /v1/events/stream with an event stream',
        requestId: res.headers.get('x-request-id'),
      });
    }
    for await (const ev of readEvents(res.body)) {
      // `caught_up` (no id) marks the end of the backlog; it is not an event of the log.
      if (ev.event !== 'caught_up') yield JSON.parse(ev.data) as WorkspaceEvent;
    }
  }

  return {
    /** GET /v1/events: one page, oldest first; read on with `after: next_after` while `has_more`. */
    list,
    /** Every event after `q.after` (default 0), page by page, until the log is caught up. */
    async *iterate(q: WorkspaceEventsQuery = {}, o?: RequestOptions): AsyncGenerator<WorkspaceEvent> {
      let after = q.after ?? 0;
      for (;;) {
        const page = await list({ ...q, after }, o);
        yield* page.data;
        if (!page.has_more) return;
        after = page.next_after;
      }
    },
    /** One connection to GET /v1/events/stream (pass `lastEventId`, the last seq seen, to resume). */
    stream,
    /**
     * Follows the log for as long as the caller reads (or until `signal` aborts): the SSE stream,
     * reconnected after a dropped connection or a gateway restart with the last seq seen, so no event
     * is lost or repeated. A 4xx other than 429 is thrown.
     */
    async *follow(o: FollowOptions = {}): AsyncGenerator<WorkspaceEvent> {
      let last = o.after !== undefined && o.after > 0 ? String(o.after) : undefined;
      for (let failures = 0; ;) {
        try {
          for await (const e of stream({ ...o, ...(last ? { lastEventId: last } : {}) })) {
            failures = 0;
            last = String(e.seq);
            yield e;
          }
        } catch (err) {
          if (o.signal?.aborted) throw o.signal.reason;
          if (err instanceof MediaGenError && err.status >= 400 && err.status < 500 && err.status !== 429) throw err;
        }
        failures++;
        await sleep(Math.min(250 * 2 ** Math.min(failures, 5), 8_000), o.signal);
      }
    },
  };
}
