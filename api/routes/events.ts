// The event stream endpoints: GET /v1/{kind}/{id}/events (a job's changes) and
// GET /v1/pipelines/{id}/events (a pipeline's and its steps' changes) as server-sent events, so
// clients can stop polling. How a stream behaves (ids, Last-Event-ID, heartbeats, caps, slow
// readers, shutdown) is api/event-stream.ts.
//
// A job's stream answers one `status` event with the job record at once (the record GET
// /v1/{kind}/{id} answers, progress included), then one per change of status, phase, percent or
// queue position, and ends after the terminal one (completed or failed); its ids are the job's
// change counter (`event_seq`, bumped by the same trigger condition that notifies `job_events`).
// A pipeline's stream carries the record GET /v1/pipelines/{id} answers, one event per change of
// the pipeline, of a step, or of a step's job (status, progress), and ends after the pipeline's
// terminal status; its ids are the counter api/pipeline-events.ts describes.
//
// Opening a stream is one request of the polling rate class, authenticated and scoped exactly as
// the status endpoint (401, 404 for another workspace's job or pipeline). Changes come from the
// process's one LISTEN connection (api/job-events.ts): open streams add no Postgres or Temporal
// load of their own but one read per change, shared by every stream of that job or pipeline.
import type { Router } from 'express';
import type { AppDeps } from '../deps.js';
import { ApiError } from '../errors.js';
import type { ApiMetrics } from '../metrics.js';
import type { JobEventHub } from '../job-events.js';
import type { StreamRegistry } from '../stream-limits.js';
import { authOf, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { lastEventIdHeader, serveEventStream } from '../event-stream.js';
import { isTerminalPipeline, readPipelineView } from '../pipeline-events.js';
import type { Job } from '../../db/schema.js';
import { kinds as jobKinds, presentJob } from './jobs/kinds.js';
import { loadJobOfKey } from './jobs/router.js';
import { isTerminal as isTerminalStatus } from '../../jobs/index.js';
import { pipelineRecordSchema } from '../../shared/pipelines.js';
import { TAG as PIPELINES_TAG } from './pipelines/common.js';

export { lastEventIdHeader } from '../event-stream.js';

/** What the event stream handlers use: the gateway's deps, the process's one event hub and its open streams. */
export interface EventServices {
  deps: AppDeps & { metrics: ApiMetrics };
  hub: JobEventHub;
  streams: StreamRegistry;
}

const contextOf = (s: EventServices) => ({ config: s.deps.config, logger: s.deps.logger, streams: s.streams });

/** One event stream endpoint per job kind, and the pipelines', each declared once (routing and the OpenAPI document). */
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
    scope: 'read',
    rateClass: 'poll',
    headers: lastEventIdHeader,
    response: k.record,
    raw: 'event-stream',
    errors: [400, 401, 404, 429, 500, 503],
    handler: ({ req, res, services }) => {
      const id = String(req.params.id);
      return serveEventStream<Job>(req, res, contextOf(services), {
        log: { jobId: id },
        watch: (w) => services.hub.watch(id, { onJob: w.onRow, onClose: w.onClose }),
        load: () => loadJobOfKey(services.deps.db, req, res, k.kind),
        seq: (job) => job.event_seq,
        isTerminal: (job) => isTerminalStatus(job.status),
        data: presentJob,
      });
    },
  });
}

eventEndpoints.add({
  method: 'get',
  path: '/v1/pipelines/:id/events',
  summary: "Stream a pipeline's changes (server-sent events, extension)",
  description:
    "A `status` event with the pipeline record (as GET /v1/pipelines/{id} answers it) now, one per change of the pipeline, of a step or of a step's job (status, progress), " +
    'and the end of the stream after the event of a completed or failed pipeline (a canceled one is failed with error code canceled). ' +
    "Each event's id is the pipeline's change counter: a reconnect with Last-Event-ID gets only what is newer.",
  tags: [PIPELINES_TAG],
  scope: 'read',
  rateClass: 'poll',
  headers: lastEventIdHeader,
  response: pipelineRecordSchema,
  raw: 'event-stream',
  errors: [400, 401, 404, 429, 500, 503],
  handler: ({ req, res, services }) => {
    const id = String(req.params.id);
    const { db, storage } = services.deps;
    return serveEventStream(req, res, contextOf(services), {
      log: { pipelineId: id },
      watch: (w) => services.hub.watchPipeline(id, w),
      load: async () => {
        const view = await readPipelineView(db, storage, id);
        if (!view || view.workspaceId !== authOf(res).workspaceId) throw new ApiError(404, 'not_found', `pipeline ${id} not found`);
        return view;
      },
      seq: (v) => v.seq,
      isTerminal: isTerminalPipeline,
      data: (v) => v.record,
    });
  },
});

export function createEventsRouter(deps: AppDeps & { metrics: ApiMetrics }, auth: Auth, hub: JobEventHub, streams: StreamRegistry): Router {
  return eventEndpoints.router({ deps, hub, streams }, auth);
}
