// The workspace's event log (extension, docs/api/events.md): GET /v1/events?after=SEQ pages through
// it gap-free and in order, GET /v1/events/stream follows it as server-sent events resuming by
// Last-Event-ID on any replica (api/event-log-stream.ts). An event is every status move of a job
// (`job.pending`, `job.generating`, `job.completed`, `job.failed`), a pipeline's events, a budget's
// threshold alert and a `balance.low` crossing, numbered per workspace in commit order
// (0120_workspace_events). Its id is the `webhook-id` of its webhook delivery, so a receiver that
// missed deliveries reads the log after the last one it has and applies what it lacks by id.
// Events are kept EVENTS_RETENTION_DAYS. Any key of the workspace may read them; never another
// workspace's: every read is by the key's workspace.
import type { Router } from 'express';
import { z } from 'zod';
import { DEFAULT_PAGE_LIMIT, pageLimitQuery, queryInteger } from '../validate.js';
import type { Auth } from '../auth.js';
import { authOf } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { invalidRequest } from '../errors.js';
import { logLastEventIdHeader, serveEventLogStream } from '../event-log-stream.js';
import type { EventServices } from './events.js';
import { lastWorkspaceSeq, listWorkspaceEvents, type TypeFilter, type WorkspaceEvent } from '../../db/repos/workspace-events.js';
import { jobFromSnapshot, presentJob } from '../../shared/job-record.js';

const TAG = 'Events';
/** The families of events, each `<family>.<name>`; `<family>.*` selects one whole. */
const eventFamilies = ['job', 'pipeline', 'budget', 'balance'] as const;
const typePattern = new RegExp(`^(${eventFamilies.join('|')})\\.(\\*|[a-z_]+(\\.[a-z_]+)?)$`);

const typeAlternative = `(${eventFamilies.join('|')})\\.(\\*|[a-z_]+(\\.[a-z_]+)?)`;
const typesField = z
  .string()
  .max(500)
  .regex(
    new RegExp(`^${typeAlternative}(,${typeAlternative})*$`),
    `not a comma-separated list of event types or families (${eventFamilies.map((f) => `${f}.*`).join(', ')})`,
  )
  .optional()
  .describe(
    'only events of these types, comma-separated: exact names (`job.completed`, `pipeline.step.failed`, `budget.threshold_reached`, `balance.low`) or a family (`job.*`, `pipeline.*`, `budget.*`, `balance.*`). Absent: every type',
  );

const seqField = (what: string) =>
  queryInteger(z.number().int().min(0).max(999_999_999_999_999))
    .optional()
    .describe(`${what} (the \`seq\` of the last event already seen; 0 or absent: from the oldest event kept)`);

const listQuery = z.object({
  after: seqField('only events numbered after this one'),
  types: typesField,
  limit: pageLimitQuery(),
});

const streamQuery = z.object({
  after: seqField('start after this event when no Last-Event-ID is sent'),
  types: typesField,
});

const workspaceEventSchema = z.object({
  id: z.string().describe("the event id: the `webhook-id` of this event's webhook delivery (`whk_…`)"),
  seq: z.number().int().describe("the event's number in the workspace's log: gap-free, in commit order"),
  type: z
    .string()
    .describe(
      'what happened: `job.<status>`, `pipeline.completed`, `pipeline.failed`, `pipeline.step.completed`, `pipeline.step.failed`, `budget.threshold_reached`, `balance.low`',
    ),
  subject_id: z.string().describe('the job, pipeline, budget or workspace it is about'),
  created_at: z.string().describe('when the move was made (ISO 8601)'),
  data: z
    .record(z.string(), z.unknown())
    .describe("the webhook body's `data`: a job event's is the job record as GET answered it at the move; the others' as their webhook sends it"),
});

const pageExtra = {
  next_after: z.number().int().describe('pass as `after` to read on: the last `seq` of this page, or the `after` given when the page is empty'),
  has_more: z.boolean().describe('a full page: more events may follow at once'),
};

function typeFilter(types: string | undefined): TypeFilter | undefined {
  if (types === undefined || types === '') return undefined;
  const out: TypeFilter = { exact: [], prefixes: [] };
  for (const t of types.split(',').map((s) => s.trim())) {
    if (!typePattern.test(t))
      throw invalidRequest(`types: '${t.slice(0, 60)}' is not an event type or family (${eventFamilies.map((f) => `${f}.*`).join(', ')})`);
    if (t.endsWith('.*')) out.prefixes.push(t.slice(0, -2));
    else out.exact.push(t);
  }
  return out;
}

function presentWorkspaceEvent(e: WorkspaceEvent): z.infer<typeof workspaceEventSchema> {
  const data = e.type.startsWith('job.') ? (presentJob(jobFromSnapshot(e.data)) as unknown as Record<string, unknown>) : e.data;
  return { id: e.id, seq: Number(e.seq), type: e.type, subject_id: e.subject_id, created_at: new Date(e.created_at).toISOString(), data };
}

export const workspaceEventEndpoints = new Endpoints<EventServices>()
  .add({
    method: 'get',
    path: '/v1/events',
    summary: "List the workspace's events after a sequence number (extension)",
    description:
      'Oldest first, gap-free: every event numbered after `after` that is still kept, in the order their moves committed. ' +
      'Read on with `after=next_after` until `has_more` is false. With `types`, only those types are returned (their numbers then skip the others). ' +
      "Each event's `id` is the `webhook-id` of its webhook delivery: a receiver that missed deliveries applies what it lacks by id. " +
      'Events are kept EVENTS_RETENTION_DAYS (30 days by default); a reader further behind gets the oldest kept first.',
    tags: [TAG],
    scope: 'read',
    rateClass: 'poll',
    query: listQuery,
    response: z.array(workspaceEventSchema),
    responseExtra: pageExtra,
    errors: [400, 401, 429, 500],
    async handler({ res, query: q, services }) {
      const { workspaceId } = authOf(res);
      const after = q.after ?? 0;
      const limit = q.limit ?? DEFAULT_PAGE_LIMIT;
      const rows = await listWorkspaceEvents(services.deps.db, workspaceId, { after, limit, types: typeFilter(q.types) });
      const data = rows.map(presentWorkspaceEvent);
      res.json({ data, next_after: data.length > 0 ? data[data.length - 1]!.seq : after, has_more: rows.length === limit });
    },
  })
  .add({
    method: 'get',
    path: '/v1/events/stream',
    summary: "Follow the workspace's events (server-sent events, extension)",
    description:
      'One SSE event per log event, oldest first, from the one after `Last-Event-ID` (or `after`), then each new one as it commits; the stream does not end. ' +
      "Each SSE event's `id` is the event's `seq`, its `event` the event type, its `data` the event as GET /v1/events answers it. " +
      'A reconnect with Last-Event-ID, to this or any other gateway replica, continues exactly after that event: nothing lost, nothing repeated. ' +
      'Once the events already in the log are sent, one `caught_up` event (no id; data `{ "seq": <last seq sent> }`) says so. ' +
      'A Last-Event-ID (or after) past the last event the workspace has (a number it never handed out) starts from the oldest event kept.',
    tags: [TAG],
    scope: 'read',
    rateClass: 'poll',
    headers: logLastEventIdHeader,
    query: streamQuery,
    response: z.union([
      workspaceEventSchema,
      z
        .object({ seq: z.number().int().describe('the last seq sent: the events already in the log when the stream opened are all sent') })
        .describe('the `caught_up` event'),
    ]),
    raw: 'event-stream',
    streamEvents: { description: "the event's type (job.completed, balance.low, …), or caught_up once the log's backlog is sent" },
    errors: [400, 401, 429, 500, 503],
    handler: async ({ req, res, query: q, services }) => {
      const { workspaceId } = authOf(res);
      const types = typeFilter(q.types);
      const header = req.get('last-event-id');
      const from = header !== undefined && header !== '' ? Number(header) : (q.after ?? 0);
      if (!Number.isSafeInteger(from)) throw invalidRequest('Last-Event-ID must be the id of an event this stream sent');
      const { db, config, logger } = services.deps;
      // A number the log never handed out cannot mean "seen" (another workspace's id, say): the stream
      // starts from the oldest event kept, as a row stream sends its current record then.
      const last = await lastWorkspaceSeq(db, workspaceId);
      return serveEventLogStream(
        req,
        res,
        { config, logger, streams: services.streams },
        {
          log: { workspaceId },
          watch: (w) => services.hub.watchWorkspace(workspaceId, w),
          read: (after, limit) => listWorkspaceEvents(db, workspaceId, { after, limit, types }),
          present: presentWorkspaceEvent,
        },
        from > last ? 0 : from,
      );
    },
  });

export function createWorkspaceEventsRouter(services: EventServices, auth: Auth): Router {
  return workspaceEventEndpoints.router(services, auth);
}
