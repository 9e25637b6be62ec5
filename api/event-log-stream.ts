// A server-sent event stream of a workspace's event log (GET /v1/events/stream): every event after
// the client's `Last-Event-ID`, in order, then each new one as it commits, on any gateway replica.
//
// It behaves as the row streams of api/event-stream.ts do where they share a concern (admission
// against the same caps, a `: ping` every SSE_HEARTBEAT_MS, a client that does not read within
// SSE_DRAIN_TIMEOUT_MS disconnected, a shutdown comment with `retry: 1000`), but it never collapses:
// each event's `id:` is its sequence number in the log and its data comes from the log, so the
// stream is the log read from the last id the client saw. A notification (`workspace_events`,
// heard on the process's one LISTEN connection, api/job-events.ts) only says "read on"; what is
// written is what the read after the last sent number returns. So a reconnect to another replica
// with Last-Event-ID N sends exactly the events after N: none lost, none repeated. Once the events
// already in the log are sent, one `caught_up` event (no `id:`, so EventSource's last id stays the
// last event's) says so with the last seq sent, so a client knows the backlog is done even when no
// new event comes. Nothing is buffered for a slow client: while the socket refuses writes nothing
// more is read.
import type { Request, Response } from 'express';
import { z } from 'zod';
import { ApiError } from './errors.js';
import { authOf } from './auth.js';
import type { StreamContext } from './event-stream.js';
import type { WorkspaceEvent } from '../db/repos/workspace-events.js';

export const logLastEventIdHeader = z.object({
  'Last-Event-ID': z
    .string()
    .regex(/^([0-9]{1,15})?$/)
    .optional()
    .describe('The `id` (sequence number) of the last event received: the stream sends the events after it (EventSource sends it on reconnect)'),
});

/** A page of the log is read at a time; a slow client holds at most one page in the socket's buffer. */
const PAGE = 200;

interface EventLogSource {
  /** Starts hearing that the log may have grown; returns the function that stops it. */
  watch(watcher: { onEvent(): void; onClose(): void }): () => void;
  /** The events numbered after `after`, in order, at most `limit`. */
  read(after: number, limit: number): Promise<WorkspaceEvent[]>;
  /** The event as the API presents it. */
  present(e: WorkspaceEvent): unknown;
  log: Record<string, string>;
}

export async function serveEventLogStream(req: Request, res: Response, ctx: StreamContext, source: EventLogSource, from: number): Promise<void> {
  let sent = from;
  let ended = false;
  let open = false;
  // A read is running; `again`: a notification came during it, read once more after it.
  let reading = false;
  let again = false;
  // The backlog (everything after `from` when the stream opened) has been sent and `caught_up` said so.
  let caughtUp = false;
  let blocked = false;
  let heartbeat: NodeJS.Timeout | null = null;
  let drainTimer: NodeJS.Timeout | null = null;
  let unwatch: () => void = () => undefined;
  let release: () => void = () => undefined;

  const end = () => {
    if (ended) return;
    ended = true;
    if (heartbeat) clearInterval(heartbeat);
    if (drainTimer) clearTimeout(drainTimer);
    unwatch();
    release();
    if (blocked) res.destroy();
    else if (open && !res.writableEnded) res.end();
  };
  const write = (chunk: string): boolean => {
    if (res.write(chunk)) return true;
    blocked = true;
    res.once('drain', () => {
      blocked = false;
      if (drainTimer) clearTimeout(drainTimer);
      drainTimer = null;
      pump();
    });
    drainTimer = setTimeout(() => {
      ctx.logger.info(source.log, 'event log stream closed: the client did not read');
      end();
    }, ctx.config.SSE_DRAIN_TIMEOUT_MS);
    drainTimer.unref();
    return false;
  };
  // Reads on from the last number sent until the log is exhausted or the socket is full.
  const pump = () => {
    if (!open || ended) return;
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    again = false;
    void (async () => {
      try {
        for (;;) {
          if (ended || blocked) return;
          const rows = await source.read(sent, PAGE);
          let room = true;
          for (const e of rows) {
            if (ended) return;
            sent = e.seq!;
            room = write(`id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(source.present(e))}\n\n`);
          }
          if (rows.length < PAGE && !caughtUp && room) {
            caughtUp = true;
            room = write(`event: caught_up\ndata: ${JSON.stringify({ seq: sent })}\n\n`);
          }
          if (!room || (rows.length < PAGE && !again)) return;
          again = false;
        }
      } catch (err) {
        // The client resumes with Last-Event-ID (from another replica if need be): nothing is lost.
        ctx.logger.warn({ ...source.log, err: { message: (err as Error).message } }, 'event log stream could not read the log; closing it');
        end();
      } finally {
        reading = false;
        if (again && !blocked && !ended) pump();
      }
    })();
  };

  try {
    release = ctx.streams.admit(authOf(res), () => end());
  } catch (err) {
    if (err instanceof ApiError && err.code === 'too_many_streams') res.setHeader('Retry-After', String(Math.ceil(Number(err.extra.retry_after_ms) / 1000)));
    throw err;
  }
  // Watch before the first read, so an event committed between the two is read too.
  unwatch = source.watch({
    onEvent: pump,
    onClose: () => {
      if (open && !ended && !blocked && !res.writableEnded) res.write(': the gateway is shutting down; reconnect with Last-Event-ID\nretry: 1000\n\n');
      end();
    },
  });
  res.on('close', end);
  if (ended) {
    if (res.destroyed) return;
    res.setHeader('Retry-After', '1');
    throw new ApiError(503, 'service_unavailable', 'the stream was closed before it opened (gateway shutting down or key revoked); reconnect');
  }
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  open = true;
  pump();
  heartbeat = setInterval(() => {
    if (!blocked && !ended) write(': ping\n\n');
  }, ctx.config.SSE_HEARTBEAT_MS);
  heartbeat.unref();
}
