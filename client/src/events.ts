// A job's (or a pipeline's) live event stream as the client reads it: the `status` events of GET …/{id}/events, and
// following them to a terminal status across reconnects (the client's waitForJob falls back to
// polling when this gives up). No Node built-ins, like the client.
import { MediaGenError } from './errors.js';
import { readEvents } from './sse.js';
import { sleep } from './util.js';
import type { AnyJob, EventsOptions, JobEvent } from './types.js';

export const terminal = new Set<string>(['completed', 'failed']);

/** The `status` events of an event-stream answer; throws `invalid_response` when it is not one. */
export async function* statusEvents<J>(res: Response, kind: string): AsyncGenerator<JobEvent<J>> {
  if (!res.body || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    await res.body?.cancel();
    throw new MediaGenError({
      status: res.status,
      code: 'invalid_response',
      message: `the gateway answered ${kind} events with ${res.headers.get('content-type') ?? 'no body'}, not an event stream`,
      requestId: res.headers.get('x-request-id'),
    });
  }
  for await (const ev of readEvents(res.body)) {
    if (ev.event !== 'status') continue;
    const parsed = JSON.parse(ev.data) as J | { data: J };
    const job = parsed && typeof parsed === 'object' && 'data' in parsed && parsed.data && typeof parsed.data === 'object' ? parsed.data : (parsed as J);
    yield { id: ev.id, job };
  }
}

/**
 * Follows a job's (or a pipeline's) event stream until a terminal status, reporting each record to
 * `seen`: the terminal record, else the latest one seen (polling takes over), or 'unsupported' when
 * the gateway has no event stream (404/405 for a job or pipeline that exists).
 */
export async function followEvents<R extends { status: string } = AnyJob>(
  open: (o: EventsOptions) => AsyncGenerator<JobEvent<R>>,
  seen: (record: R) => unknown,
  signal?: AbortSignal,
): Promise<R | null | 'unsupported'> {
  let lastEventId: string | undefined;
  let latest: R | null = null;
  for (let reconnects = 0; reconnects < 5; reconnects++) {
    try {
      for await (const { id, job } of open({ signal, ...(lastEventId ? { lastEventId } : {}) })) {
        if (id !== null) lastEventId = id;
        latest = job;
        seen(job);
        if (terminal.has(job.status)) return job;
      }
      // The stream closed before a terminal event (a gateway restart): resume from the last id.
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      // The job or pipeline exists (we just read it), so 404/405 means this gateway has no event stream.
      if (err instanceof MediaGenError && (err.status === 404 || err.status === 405)) return 'unsupported';
      // A body that is not an event stream: poll.
      if (err instanceof MediaGenError && err.code === 'invalid_response') return latest;
      // A connection dropped mid-stream (fetch's "terminated"), a network error or a 503 while the
      // gateway restarts: reconnect after a short pause, then polling takes over and reports the
      // failure if it persists.
      await sleep(250 * (reconnects + 1), signal);
    }
  }
  return latest; // then polling takes over
}
