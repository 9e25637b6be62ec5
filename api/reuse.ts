// A create's reuse (docs/api/reuse.md), the gateway's part: whether the request opted in (its
// `reuse`, else the workspace's setting), and the key of its canonical request (jobs/reuse.ts), with
// each upload input by its stored content's entity tag. The dry run says what the create would do.
import type { Queryable } from '../db/index.js';
import type { Storage } from '../shared/storage.js';
import type { KindDescriptor } from '../kinds/index.js';
import { reuseKeyOf, sourceUsable } from '../jobs/reuse.js';
import { ApiError } from './errors.js';

/** What a dry run answers of reuse: the job the create would follow, and what it would cost then. */
interface ReuseQuote {
  source_job_id: string;
  source_status: 'completed' | 'in_flight';
  price: number;
}

/** How long this process trusts a workspace's `reuse_requests` it read: an operator's change applies within it. */
const SETTING_TTL_MS = 5_000;
/** Past this many workspaces remembered, the memory starts over. */
const SETTING_CACHE_MAX = 10_000;
const settings = new Map<string, { reuses: boolean; until: number }>();

/** The workspace's reuse setting, read at most every SETTING_TTL_MS per process: a create that leaves `reuse` out costs no extra query most of the time. */
async function workspaceReuses(db: Queryable, workspaceId: string): Promise<boolean> {
  const now = performance.now();
  const known = settings.get(workspaceId);
  if (known && known.until > now) return known.reuses;
  const ws = await db.selectFrom('workspaces').select('reuse_requests').where('id', '=', workspaceId).executeTakeFirst();
  if (settings.size >= SETTING_CACHE_MAX) settings.clear();
  settings.set(workspaceId, { reuses: ws?.reuse_requests ?? false, until: now + SETTING_TTL_MS });
  return ws?.reuse_requests ?? false;
}

/**
 * The reuse key of a create, or null when it does not reuse: it said `reuse: false`, or left it out
 * in a workspace without the setting, or (with the setting only) it has URL inputs. `reuse: true`
 * with a URL input is refused (400): its content is known only when the job runs.
 */
export async function createReuseKey(
  deps: { db: Queryable; storage: Pick<Storage, 'stat'> },
  kind: Pick<KindDescriptor, 'kind' | 'inputs'>,
  body: Record<string, unknown>,
  prepared: { model: string; params: Record<string, unknown> },
  workspaceId: string,
): Promise<string | null> {
  const asked = body.reuse as boolean | undefined;
  if (asked === false) return null;
  if (asked === undefined && !(await workspaceReuses(deps.db, workspaceId))) return null;
  const inputs = Object.entries(kind.inputs ?? {});
  const byUrl = inputs.find(([field, input]) => input.from === 'url' && body[field] !== undefined);
  if (byUrl) {
    if (asked) {
      throw new ApiError(
        400,
        'invalid_request',
        `reuse: ${byUrl[0]} is a URL, whose content is known only when the job runs; upload the file (POST /v1/uploads) and give its id to reuse`,
      );
    }
    return null;
  }
  const ids = inputs.flatMap(([field, input]) => {
    const value = prepared.params[field];
    return input.from === 'upload' ? (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string' && v !== '') : [];
  });
  const digests = new Map<string, string>();
  if (ids.length > 0) {
    const uploads = await deps.db
      .selectFrom('file_uploads')
      .select(['id', 'object_key'])
      .where('workspace_id', '=', workspaceId)
      .where('id', 'in', ids)
      .execute();
    for (const up of uploads) {
      const stat = await deps.storage.stat(up.object_key);
      // No tag to compare by (a store that gives none): the request is not reused, never wrongly.
      if (!stat?.etag) return null;
      digests.set(up.id, stat.etag);
    }
  }
  return reuseKeyOf({ kind: kind.kind, model: prepared.model, params: prepared.params }, digests);
}

/** What a create with reuse key `key` would do now: follow the job that holds it (and at what price), or null (it would run). */
export async function quoteReuse(
  q: Queryable,
  workspaceId: string,
  key: string,
  reusePrice: number,
  price: number,
  outputRetentionDays: number | null,
): Promise<ReuseQuote | null> {
  const source = await q
    .selectFrom('reuse_sources as r')
    .innerJoin('jobs as j', 'j.id', 'r.job_id')
    .select(['j.id', 'j.status', 'j.outputs', 'j.outputs_removed_at', 'j.finished_at', 'j.updated_at'])
    .where('r.workspace_id', '=', workspaceId)
    .where('r.reuse_key', '=', key)
    .where('j.workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!source) return null;
  const answer = { source_job_id: source.id, price: Math.min(reusePrice, price) };
  if (sourceUsable(source, outputRetentionDays)) return { ...answer, source_status: 'completed' };
  if (source.status === 'pending' || source.status === 'generating') return { ...answer, source_status: 'in_flight' };
  return null;
}
