// One server-sent event stream of a row's changes (a job's, a pipeline's): what every event stream
// endpoint shares (api/routes/events.ts declares them).
//
// The stream answers one `status` event with the record at once, then one per change, and ends
// after the terminal one. Each event's `id:` is the row's change counter, so a reconnect with
// `Last-Event-ID` gets only what is newer: nothing at once if the row has not changed since (the
// stream waits for the next change), and an immediate end if that id was already the terminal one.
// A `: ping` comment every SSE_HEARTBEAT_MS keeps idle proxies from closing a quiet stream.
//
// What one client can hold is bounded. Open streams are capped per API key, per workspace and per
// process (api/stream-limits.ts: 429 `too_many_streams` naming the cap), and a revoked key's streams
// end. Nothing is buffered for a client that does not read: once a write is refused by the socket
// (res.write() answers false), no more is written until 'drain'; changes meanwhile collapse into the
// newest record (each event is the whole record, so nothing is lost but intermediate states), and a
// client that has not drained within SSE_DRAIN_TIMEOUT_MS is disconnected.
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError } from './errors.js';
import type { StreamRegistry } from './stream-limits.js';
import { authOf } from './auth.js';
import type { Config } from '../shared/config.js';

export const lastEventIdHeader = z.object({
  'Last-Event-ID': z
    .string()
    // Empty is accepted too (EventSource's reset, see seenThrough); [0-9], as other regex engines read \d as any Unicode digit.
    .regex(/^([0-9]{1,9})?$/)
    .optional()
    .describe("The `id` of the last event received (browsers' EventSource sends it on reconnect): only newer changes are sent"),
});

/** The Last-Event-ID header as a change counter: 0 when absent or empty (EventSource's reset). */
function seenThrough(header: string | undefined): number {
  if (header === undefined || header === '') return 0;
  if (!/^\d{1,9}$/.test(header)) throw new ApiError(400, 'invalid_request', 'Last-Event-ID must be the id of an event this stream sent');
  return Number(header);
}

/** What a stream follows: how to watch and read its row, and what of the row it sends. */
interface StreamedRow<T> {
  /** Names the row in log lines, e.g. `{ jobId }`. */
  log: Record<string, string>;
  /** Starts hearing the row's changes (the process's event hub); returns the function that stops it. */
  watch(watcher: { onRow(row: T): void; onClose(): void }): () => void;
  /** The row now, as the key may see it (throws the 404 of a row the key may not see). */
  load(): Promise<T>;
  seq(row: T): number;
  isTerminal(row: T): boolean;
  /** The event's data (the record the status endpoint answers). */
  data(row: T): unknown;
}

export interface StreamContext {
  config: Pick<Config, 'SSE_DRAIN_TIMEOUT_MS' | 'SSE_HEARTBEAT_MS'>;
  logger: Logger;
  streams: StreamRegistry;
}

export async function serveEventStream<T>(req: Request, res: Response, ctx: StreamContext, source: StreamedRow<T>): Promise<void> {
  let sent = seenThrough(req.get('last-event-id'));
  let open = false;
  let ended = false;
  // Newest row heard before the stream is open (it is sent if newer than the first read).
  let early: T | null = null;
  let heartbeat: NodeJS.Timeout | null = null;
  // The socket refused the last write: nothing more is written until 'drain' (see the header).
  let blocked = false;
  let drainTimer: NodeJS.Timeout | null = null;
  // The newest row heard while blocked, sent on 'drain'.
  let owed: T | null = null;
  // Assigned by watch below, which may already call end() (a hub closing at shutdown).
  let unwatch: () => void = () => undefined;
  let release: () => void = () => undefined;

  const end = () => {
    if (ended) return;
    ended = true;
    if (heartbeat) clearInterval(heartbeat);
    if (drainTimer) clearTimeout(drainTimer);
    unwatch();
    release();
    // A client that stopped reading would keep the socket (and what it buffers) after end().
    if (blocked) res.destroy();
    else if (open && !res.writableEnded) res.end();
  };
  const onDrain = () => {
    blocked = false;
    if (drainTimer) clearTimeout(drainTimer);
    drainTimer = null;
    const next = owed;
    owed = null;
    if (next) deliver(next);
  };
  const write = (chunk: string) => {
    if (res.write(chunk)) return;
    blocked = true;
    res.once('drain', onDrain);
    drainTimer = setTimeout(() => {
      ctx.logger.info(source.log, 'event stream closed: the client did not read');
      end();
    }, ctx.config.SSE_DRAIN_TIMEOUT_MS);
    drainTimer.unref();
  };
  const deliver = (row: T) => {
    if (ended) return;
    const seq = source.seq(row);
    if (blocked) {
      if (!owed || seq > source.seq(owed)) owed = row;
      return;
    }
    if (seq > sent) {
      sent = seq;
      write(`id: ${seq}\nevent: status\ndata: ${JSON.stringify(source.data(row))}\n\n`);
    }
    // Once the terminal change is sent (or was already seen), nothing follows; a terminal
    // record still waiting for 'drain' ends the stream when it is written.
    if (source.isTerminal(row) && seq <= sent && !blocked) end();
  };

  // Admitted before anything is read or watched: a refused stream costs nothing more.
  try {
    release = ctx.streams.admit(authOf(res), () => end());
  } catch (err) {
    if (err instanceof ApiError && err.code === 'too_many_streams') res.setHeader('Retry-After', String(Math.ceil(Number(err.extra.retry_after_ms) / 1000)));
    throw err;
  }

  // Watch before the first read, so a change between the two is not lost; the counter drops
  // whatever arrives twice or out of order.
  const stopWatching = source.watch({
    onRow: (row) => {
      if (open) deliver(row);
      else if (!early || source.seq(row) > source.seq(early)) early = row;
    },
    // The gateway is shutting down: the stream ends with a comment saying so and a short
    // reconnection delay, so EventSource clients come back (to another gateway) at once with
    // Last-Event-ID.
    onClose: () => {
      if (open && !ended && !blocked && !res.writableEnded) res.write(': the gateway is shutting down; reconnect with Last-Event-ID\nretry: 1000\n\n');
      end();
    },
  });
  unwatch = stopWatching;
  if (ended) stopWatching();
  res.on('close', end);
  let row: T;
  try {
    row = await source.load();
  } catch (err) {
    end();
    throw err;
  }
  if (ended) {
    // The gateway began shutting down during the read, the client left, or its key was revoked.
    if (res.destroyed) return;
    res.setHeader('Retry-After', '1');
    throw new ApiError(503, 'service_unavailable', 'the stream was closed before it opened (gateway shutting down or key revoked); reconnect');
  }

  // (TypeScript cannot see that the watcher may have set it meanwhile.)
  const heard = early as T | null;
  const first = heard && source.seq(heard) > source.seq(row) ? heard : row;
  // An id this row never reached (another row's, say) cannot mean "seen": send the current state.
  if (sent > source.seq(first)) sent = 0;

  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  // Proxies that buffer (nginx) pass events through at once.
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  open = true;
  deliver(first);
  if (ended) return;
  heartbeat = setInterval(() => {
    if (!blocked) write(': ping\n\n');
  }, ctx.config.SSE_HEARTBEAT_MS);
  heartbeat.unref();
}
