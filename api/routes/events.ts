// GET /v1/{kind}/{id}/events: a job's changes as server-sent events, so clients can stop polling.
//
// The stream answers one `status` event with the job record at once (the record GET /v1/{kind}/{id}
// answers, progress included), then one per change of status, phase, percent or queue position, and
// ends after the terminal one (completed or failed). Each event's `id:` is the job's change counter
// (`event_seq`, bumped by the same trigger condition that notifies `job_events`), so a reconnect
// with `Last-Event-ID` gets only what is newer: nothing at once if the job has not changed since (the
// stream waits for the next change), and an immediate end if that id was already the terminal one.
// A `: ping` comment every SSE_HEARTBEAT_MS keeps idle proxies from closing a quiet stream.
//
// Opening a stream is one request of the polling rate class, authenticated and scoped exactly as
// the status endpoint (401, 404 for another workspace's job). Changes come from the process's one
// LISTEN connection (api/job-events.ts): open streams add no Postgres or Temporal load of their own.
//
// What one client can hold is bounded. Open streams are capped per API key, per workspace and per
// process (api/stream-limits.ts: 429 `too_many_streams` naming the cap), and a revoked key's streams
// end. Nothing is buffered for a client that does not read: once a write is refused by the socket
// (res.write() answers false), no more is written until 'drain'; changes meanwhile collapse into the
// newest record (each event is the whole record, so nothing is lost but intermediate states), and a
// client that has not drained within SSE_DRAIN_TIMEOUT_MS is disconnected.
import type { Router } from 'express';
import { z } from 'zod';
import type { AppDeps } from '../deps.js';
import { ApiError } from '../errors.js';
import type { ApiMetrics } from '../metrics.js';
import type { JobEventHub } from '../job-events.js';
import type { StreamRegistry } from '../stream-limits.js';
import { authOf, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import type { Job } from '../../db/schema.js';
import { kinds as jobKinds, presentJob } from './jobs/kinds.js';
import { loadJobOfKey } from './jobs/router.js';
import { isTerminal as isTerminalStatus } from '../../jobs/index.js';

export const lastEventIdHeader = z.object({
  'Last-Event-ID': z
    .string()
    // Empty is accepted too (EventSource's reset, see seenThrough); [0-9], as other regex engines read \d as any Unicode digit.
    .regex(/^([0-9]{1,9})?$/)
    .optional()
    .describe("The `id` of the last event received (browsers' EventSource sends it on reconnect): only newer changes are sent"),
});

const isTerminal = (job: Job) => isTerminalStatus(job.status);

/** The Last-Event-ID header as a change counter: 0 when absent or empty (EventSource's reset). */
function seenThrough(header: string | undefined): number {
  if (header === undefined || header === '') return 0;
  if (!/^\d{1,9}$/.test(header)) throw new ApiError(400, 'invalid_request', 'Last-Event-ID must be the id of an event this stream sent');
  return Number(header);
}

/** What the event stream handlers use: the gateway's deps, the process's one job event hub and its open streams. */
export interface EventServices {
  deps: AppDeps & { metrics: ApiMetrics };
  hub: JobEventHub;
  streams: StreamRegistry;
}

/** One event stream endpoint per job kind, each declared once (routing and the OpenAPI document). */
export const eventEndpoints = new Endpoints<EventServices>();
for (const k of jobKinds) {
  eventEndpoints.add({
    method: 'get',
    path: `${k.base}/:id/events`,
    summary: `Stream a ${k.kind.replace('_', '-')} job's changes (server-sent events)`,
    description:
      'A `status` event with the job record now, one per change of status, phase, percent or queue position, ' +
      'and the end of the stream after the terminal one.',
    tags: [k.tag],
    rateClass: 'poll',
    headers: lastEventIdHeader,
    response: k.record,
    raw: 'event-stream',
    errors: [400, 401, 404, 429, 500, 503],
    async handler({ req, res, services }) {
      let sent = seenThrough(req.get('last-event-id'));
      let open = false;
      let ended = false;
      // Newest row heard before the stream is open (it is sent if newer than the first read).
      let early: Job | null = null;
      let heartbeat: NodeJS.Timeout | null = null;
      // The socket refused the last write: nothing more is written until 'drain' (see the header).
      let blocked = false;
      let drainTimer: NodeJS.Timeout | null = null;
      // The newest record heard while blocked, sent on 'drain'.
      let owed: Job | null = null;
      // Assigned by hub.watch below, which may already call end() (a hub closing at shutdown).
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
          services.deps.logger.info({ jobId: req.params.id }, 'event stream closed: the client did not read');
          end();
        }, services.deps.config.SSE_DRAIN_TIMEOUT_MS);
        drainTimer.unref();
      };
      const deliver = (job: Job) => {
        if (ended) return;
        if (blocked) {
          if (!owed || job.event_seq > owed.event_seq) owed = job;
          return;
        }
        if (job.event_seq > sent) {
          sent = job.event_seq;
          write(`id: ${job.event_seq}\nevent: status\ndata: ${JSON.stringify(presentJob(job))}\n\n`);
        }
        // Once the terminal change is sent (or was already seen), nothing follows; a terminal
        // record still waiting for 'drain' ends the stream when it is written.
        if (isTerminal(job) && job.event_seq <= sent && !blocked) end();
      };

      // Admitted before anything is read or watched: a refused stream costs nothing more.
      try {
        release = services.streams.admit(authOf(res), () => end());
      } catch (err) {
        if (err instanceof ApiError && err.code === 'too_many_streams')
          res.setHeader('Retry-After', String(Math.ceil(Number(err.extra.retry_after_ms) / 1000)));
        throw err;
      }

      // Watch before the first read, so a change between the two is not lost; the counter drops
      // whatever arrives twice or out of order.
      const stopWatching = services.hub.watch(String(req.params.id), {
        onJob: (job) => {
          if (open) deliver(job);
          else if (!early || job.event_seq > early.event_seq) early = job;
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
      let job: Job;
      try {
        job = await loadJobOfKey(services.deps.db, req, res, k.kind);
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
      const heard = early as Job | null;
      const first = heard && heard.event_seq > job.event_seq ? heard : job;
      // An id this job never reached (another job's, say) cannot mean "seen": send the current state.
      if (sent > first.event_seq) sent = 0;

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
      }, services.deps.config.SSE_HEARTBEAT_MS);
      heartbeat.unref();
    },
  });
}

export function createEventsRouter(deps: AppDeps & { metrics: ApiMetrics }, auth: Auth, hub: JobEventHub, streams: StreamRegistry): Router {
  return eventEndpoints.router({ deps, hub, streams }, auth);
}
