// Discovery lists: a workspace's projects, the actor and voice catalogs. Keyset pagination in a
// stable order (projects by created_at, id; actors and voices by sort_key, id); one extra row is
// read to know whether another page exists.
import { sql } from 'kysely';
import type { Queryable } from '../index.js';
import type { Actor, Project, Voice } from '../schema.js';

export interface Page<T, K> {
  rows: T[];
  /** The sort key of the last row when more rows follow, else null. */
  next: K | null;
}

/** Projects sort by created_at at microsecond precision (JS dates have only milliseconds). */
export interface ProjectKey {
  createdAtMicros: string;
  id: string;
}

export interface CatalogKey {
  sortKey: number;
  id: string;
}

interface ActorFilters {
  gender?: string;
  age?: string;
  skin_tone?: string;
  is_pro?: boolean;
}

function page<T, K>(rows: T[], limit: number, keyOf: (row: T) => K): Page<T, K> {
  if (rows.length <= limit) return { rows, next: null };
  const kept = rows.slice(0, limit);
  return { rows: kept, next: keyOf(kept[kept.length - 1]!) };
}

export async function listProjectsPage(
  db: Queryable,
  workspaceId: string,
  opts: { limit: number; after?: ProjectKey | null },
): Promise<Page<Project, ProjectKey>> {
  let q = db
    .selectFrom('projects')
    .selectAll()
    .select(sql<string>`(extract(epoch from created_at) * 1000000)::bigint::text`.as('created_us'))
    .where('workspace_id', '=', workspaceId);
  if (opts.after) {
    const at = sql`timestamptz 'epoch' + ${opts.after.createdAtMicros}::bigint * interval '1 microsecond'`;
    q = q.where(sql<boolean>`(created_at, id) > (${at}, ${opts.after.id})`);
  }
  const rows = await q
    .orderBy('created_at')
    .orderBy('id')
    .limit(opts.limit + 1)
    .execute();
  const result = page(rows, opts.limit, (r) => ({ createdAtMicros: r.created_us, id: r.id }));
  return { rows: result.rows.map(({ created_us: _, ...p }) => p), next: result.next };
}

export async function listActorsPage(
  db: Queryable,
  opts: { limit: number; after?: CatalogKey | null; filters?: ActorFilters },
): Promise<Page<Actor, CatalogKey>> {
  let q = db.selectFrom('actors').selectAll();
  const f = opts.filters ?? {};
  if (f.gender !== undefined) q = q.where('gender', '=', f.gender);
  if (f.age !== undefined) q = q.where('age', '=', f.age);
  if (f.skin_tone !== undefined) q = q.where('skin_tone', '=', f.skin_tone);
  if (f.is_pro !== undefined) q = q.where('is_pro', '=', f.is_pro);
  if (opts.after) q = q.where(sql<boolean>`(sort_key, id) > (${opts.after.sortKey}::integer, ${opts.after.id})`);
  const rows = await q
    .orderBy('sort_key')
    .orderBy('id')
    .limit(opts.limit + 1)
    .execute();
  return page(rows, opts.limit, (r) => ({ sortKey: r.sort_key, id: r.id }));
}

export async function listVoicesPage(db: Queryable, opts: { limit: number; after?: CatalogKey | null }): Promise<Page<Voice, CatalogKey>> {
  let q = db.selectFrom('voices').selectAll();
  if (opts.after) q = q.where(sql<boolean>`(sort_key, id) > (${opts.after.sortKey}::integer, ${opts.after.id})`);
  const rows = await q
    .orderBy('sort_key')
    .orderBy('id')
    .limit(opts.limit + 1)
    .execute();
  return page(rows, opts.limit, (r) => ({ sortKey: r.sort_key, id: r.id }));
}
