// GET /v1/jobs (every kind) and the per-kind lists GET /v1/images, /v1/videos,
// /v1/replace-actors/generations, /v1/talking-actors: the key's workspace's jobs, newest first, as
// the same records GET /v1/{kind}/{id} answers (/v1/jobs adds `kind`). Filters: project_id, status,
// model, priority, created_after / created_before (ms since the epoch, exclusive), tag and
// metadata[key] (api/label-filters.ts, over the label index); keyset pagination like the
// discovery lists (`limit`, `cursor` = `<list>.<created_at µs>.<id>`, top-level `next_cursor`).
import { z } from 'zod';
import { DEFAULT_PAGE_LIMIT, pageLimitQuery, queryInteger } from '../validate.js';
import type { AppDeps } from '../deps.js';
import { authOf, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { invalidRequest } from '../errors.js';
import { kinds as jobKinds, presentJob } from './jobs/kinds.js';
import { jobStatuses, type JobKind } from '../../db/schema.js';
import { jobPriorities } from '../../shared/job-model.js';
import { listJobsPage, type JobListKey } from '../../db/repos/job-lists.js';
import { labelFilters, labelQueryFields } from '../label-filters.js';

/** A list's name in its cursors: `jobs`, or the kind's (its descriptor's `list`). */
type ListName = string;

const CURSOR_REFUSED = 'not a cursor returned by this endpoint';
const cursorPattern = (list: ListName) => new RegExp(`^${list}\\.([0-9]{1,16})\\.([A-Za-z0-9_-]{1,200})$`);
/** Bounds of created_after / created_before: ms since the epoch up to year 9999. */
const MAX_MILLIS = 253_402_300_799_999;

const millis = (what: string) =>
  queryInteger(z.number().int().min(0).max(MAX_MILLIS)).describe(`only jobs created ${what} this moment (milliseconds since the Unix epoch, exclusive)`);

function listQuery(list: ListName) {
  return z.object({
    limit: pageLimitQuery(),
    cursor: z.string().regex(cursorPattern(list), CURSOR_REFUSED).optional().describe('the next_cursor of the previous page'),
    project_id: z.string().min(1).max(100).optional().describe('only jobs of this project'),
    status: z.enum(jobStatuses).optional(),
    model: z.string().min(1).max(100).optional().describe('only jobs of this model'),
    priority: z.enum(jobPriorities).optional().describe('only jobs of this priority'),
    created_after: millis('after').optional(),
    created_before: millis('before').optional(),
    ...labelQueryFields,
  });
}

const nextCursor = { next_cursor: z.string().nullable().describe('pass as `cursor` to get the next page; null on the last page') };

const anyJobRecord = z.discriminatedUnion(
  'kind',
  jobKinds.map((k) =>
    (k.record as z.ZodObject).extend({ kind: z.literal(k.kind).describe('the job kind (its status path: ' + k.base + '/{id})') }),
  ) as unknown as [z.ZodObject, ...z.ZodObject[]],
);

interface ListSpec {
  path: string;
  list: ListName;
  kind?: JobKind;
  query: ReturnType<typeof listQuery>;
}

const lists: ListSpec[] = [
  { path: '/v1/jobs', list: 'jobs', query: listQuery('jobs') },
  ...jobKinds.map((k) => ({ path: k.base, list: k.list, kind: k.kind, query: listQuery(k.list) })),
];

function decodeCursor(list: ListName, cursor: string): JobListKey {
  const m = cursorPattern(list).exec(cursor);
  if (!m) throw invalidRequest(`cursor: ${CURSOR_REFUSED}`);
  return { createdAtMicros: m[1]!, id: m[2]! };
}

/** The job lists, each declared once (routing, validation and the OpenAPI document). */
export const jobListEndpoints = new Endpoints<AppDeps>();
for (const l of lists) {
  const spec = l.kind ? jobKinds.find((k) => k.kind === l.kind)! : undefined;
  jobListEndpoints.add({
    method: 'get',
    path: l.path,
    summary: spec ? `List the workspace's ${spec.kind.replace('_', '-')} jobs (extension)` : "List the workspace's jobs of every kind (extension)",
    description: spec ? 'Newest first.' : 'Newest first; each record adds `kind`.',
    tags: [spec?.tag ?? 'Jobs'],
    scope: 'read',
    rateClass: 'poll',
    query: l.query,
    response: z.array(spec ? spec.record : anyJobRecord),
    responseExtra: nextCursor,
    errors: [400, 401, 429, 500],
    async handler({ req, res, query: q, services: deps }) {
      const { workspaceId } = authOf(res);
      const page = await listJobsPage(deps.db, workspaceId, {
        limit: q.limit ?? DEFAULT_PAGE_LIMIT,
        after: q.cursor ? decodeCursor(l.list, q.cursor) : null,
        filters: {
          kind: l.kind,
          projectId: q.project_id,
          status: q.status,
          model: q.model,
          priority: q.priority,
          createdAfter: q.created_after,
          createdBefore: q.created_before,
          labels: labelFilters(req.query),
        },
      });
      const data = page.rows.map((job) => (l.kind ? presentJob(job) : { ...presentJob(job), kind: job.kind }));
      res.json({ data, next_cursor: page.next ? `${l.list}.${page.next.createdAtMicros}.${page.next.id}` : null });
    },
  });
}

export const createJobListsRouter = (deps: AppDeps, auth: Auth) => jobListEndpoints.router(deps, auth);
