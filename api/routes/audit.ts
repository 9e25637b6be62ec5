// GET /v1/audit-events (extension): the key's workspace's audit log, newest first: API keys created
// and revoked, the webhook secret rotated, credits granted and deducted, fair share and priority
// changed, budgets set and removed, outputs deleted, and the operator terminates and resets the
// reconciler detected (shared/audit.ts). Owner keys only: a key whose creator is an owner of the
// workspace now (api/auth.ts); any other key answers 403 `owner_key_required`. Filters: action,
// target_id, from (inclusive) / to (exclusive) as RFC 3339 timestamps; keyset pagination like the
// job lists (`limit`, `cursor` = `audit.<created_at µs>.<id>`, top-level `next_cursor`). Never
// another workspace's events: every read is by the key's workspace.
import { z } from 'zod';
import { DEFAULT_PAGE_LIMIT, pageLimitQuery } from '../validate.js';
import type { AppDeps } from '../deps.js';
import { authOf, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { ApiError, invalidRequest } from '../errors.js';
import { listAuditEvents, type AuditEventKey } from '../../db/repos/audit.js';
import type { AuditEvent } from '../../db/schema.js';
import { auditActions } from '../../shared/audit.js';

const CURSOR_REFUSED = 'not a cursor returned by this endpoint';
const cursorPattern = /^audit\.([0-9]{1,16})\.([A-Za-z0-9_-]{1,200})$/;

const timestamp = (what: string) =>
  z.iso.datetime({ offset: true }).describe(`only events recorded ${what} this moment (an RFC 3339 timestamp, e.g. 2026-11-01T00:00:00Z)`);

const auditQuery = z.object({
  limit: pageLimitQuery(),
  cursor: z.string().regex(cursorPattern, CURSOR_REFUSED).optional().describe('the next_cursor of the previous page'),
  action: z.enum(auditActions).optional().describe('only events of this action'),
  target_id: z.string().min(1).max(200).optional().describe('only events about this object (an API key id, a job id, a webhook secret id, the workspace id)'),
  from: timestamp('at or after').optional(),
  to: timestamp('before').optional(),
});

const auditEventSchema = z.object({
  id: z.string().describe('the event id'),
  action: z.enum(auditActions).describe('what was done'),
  actor: z
    .string()
    .describe(
      "who did it: an owner's email (the admin CLI, acting for that owner), `key:<API key id>`, or `system:<component>` (`system:admin-cli`: an operator; `system:reconciler`: detected in Temporal)",
    ),
  target_type: z.string().nullable().describe("what kind of object it acted on: 'api_key', 'webhook_secret', 'workspace', 'budget', 'job', 'member'"),
  target_id: z.string().nullable().describe("that object's id"),
  details: z.record(z.string(), z.unknown()).describe('what changed (amounts, names, old and new values); never a secret'),
  created_at: z.string().describe('when it was recorded (ISO 8601)'),
});

const nextCursor = { next_cursor: z.string().nullable().describe('pass as `cursor` to get the next page; null on the last page') };

function decodeCursor(cursor: string): AuditEventKey {
  const m = cursorPattern.exec(cursor);
  if (!m) throw invalidRequest(`cursor: ${CURSOR_REFUSED}`);
  return { createdAtMicros: m[1]!, id: m[2]! };
}

function presentAuditEvent(e: AuditEvent): z.infer<typeof auditEventSchema> {
  return {
    id: e.id,
    action: e.action,
    actor: e.actor,
    target_type: e.target_type,
    target_id: e.target_id,
    details: e.details as Record<string, unknown>,
    created_at: new Date(e.created_at).toISOString(),
  };
}

export const auditEndpoints = new Endpoints<AppDeps>().add({
  method: 'get',
  path: '/v1/audit-events',
  summary: "List the workspace's audit events (extension; owner keys only)",
  description:
    'Newest first. Only a key created by a member who is an owner of the workspace now may read it; any other key answers 403 owner_key_required. ' +
    'Events are kept AUDIT_RETENTION_DAYS (400 days by default).',
  tags: ['Audit'],
  scope: 'read',
  rateClass: 'poll',
  query: auditQuery,
  response: z.array(auditEventSchema),
  responseExtra: nextCursor,
  errors: [400, 401, 403, 429, 500],
  async handler({ res, query: q, services: deps }) {
    const { workspaceId, owner } = authOf(res);
    if (!owner) {
      throw new ApiError(
        403,
        'owner_key_required',
        'the audit log is readable only with an owner key: a key created by a member who is an owner of the workspace',
      );
    }
    const from = q.from === undefined ? undefined : new Date(q.from);
    const to = q.to === undefined ? undefined : new Date(q.to);
    const page = await listAuditEvents(deps.db, workspaceId, {
      limit: q.limit ?? DEFAULT_PAGE_LIMIT,
      after: q.cursor ? decodeCursor(q.cursor) : null,
      filters: { action: q.action, targetId: q.target_id, from, to },
    });
    res.json({ data: page.rows.map(presentAuditEvent), next_cursor: page.next ? `audit.${page.next.createdAtMicros}.${page.next.id}` : null });
  },
});

export const createAuditRouter = (deps: AppDeps, auth: Auth) => auditEndpoints.router(deps, auth);
