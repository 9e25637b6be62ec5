// GET /v1/projects, /v1/actors, /v1/voices: `data` arrays with optional keyset pagination
// (`limit` 1–100, default 50; `cursor` as the previous page's top-level `next_cursor`, null at the end).
import type { Router } from 'express';
import { z } from 'zod';
import { DEFAULT_PAGE_LIMIT, pageLimitQuery } from '../validate.js';
import type { AppDeps } from '../deps.js';
import type { Auth } from '../auth.js';
import { authOf } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { invalidRequest } from '../errors.js';
import { mediaUrl, publicBaseUrl } from './media.js';
import { actorAges, actorGenders, actorSkinTones } from '../../db/seed-data.js';
import { listActorsPage, listProjectsPage, listVoicesPage, type CatalogKey, type ProjectKey } from '../../db/repos/catalog.js';
import type { Actor, Project, Voice } from '../../db/schema.js';

// Cursors are `<list>.<sort key>.<id>`, each list's format a pattern in the document: any cursor
// that matches it is a valid keyset position (sort keys bounded so the SQL casts never overflow;
// [0-9], not \d, which other regex engines read as any Unicode digit).
const cursorPatterns = {
  projects: /^projects\.([0-9]{1,16})\.([A-Za-z0-9_-]{1,200})$/,
  actors: /^actors\.(-?[0-9]{1,9})\.([A-Za-z0-9_-]{1,200})$/,
  voices: /^voices\.(-?[0-9]{1,9})\.([A-Za-z0-9_-]{1,200})$/,
} as const;
const CURSOR_REFUSED = 'not a cursor returned by this endpoint';

const listQuery = (kind: CursorKind) =>
  z.object({
    limit: pageLimitQuery(),
    cursor: z.string().regex(cursorPatterns[kind], CURSOR_REFUSED).optional().describe('the next_cursor of the previous page'),
  });
const projectsQuery = listQuery('projects');
const voicesQuery = listQuery('voices');

const actorsQuery = listQuery('actors').extend({
  gender: z.enum(actorGenders).optional(),
  age: z.enum(actorAges).optional(),
  skin_tone: z.enum(actorSkinTones).optional(),
  is_pro: z.enum(['true', 'false']).optional(),
});

const projectSchema = z.object({
  id: z.string(),
  name: z.string(),
  workspace_id: z.string(),
  created_at: z.number().int().describe('milliseconds since the Unix epoch'),
  updated_at: z.number().int().describe('milliseconds since the Unix epoch'),
});

const actorSchema = z.object({
  id: z.string(),
  name: z.string(),
  age: z.enum(actorAges),
  gender: z.enum(actorGenders),
  skin_tone: z.enum(actorSkinTones),
  is_pro: z.boolean(),
  default_voice_id: z.string().nullable().describe('voice used when a talking-actor request omits voice_id; null when the actor has none'),
  reference_image_url: z.url(),
  preview_video_url: z.url(),
  preview_thumbnail_url: z.url(),
});

const voiceSchema = z.object({
  id: z.string(),
  name: z.string(),
  gender: z.string(),
  language: z.string(),
  accent: z.string(),
  preview_url: z.url(),
});

const nextCursor = { next_cursor: z.string().nullable().describe('pass as `cursor` to get the next page; null on the last page') };
const discoveryErrors = [400, 401, 429, 500];

// ---- cursors: the last row's sort key and id, tagged with the list it belongs to

type CursorKind = 'projects' | 'actors' | 'voices';

export function encodeCursor(kind: CursorKind, key: ProjectKey | CatalogKey): string {
  const value = 'createdAtMicros' in key ? key.createdAtMicros : key.sortKey;
  return `${kind}.${value}.${key.id}`;
}

function decodeRaw(kind: CursorKind, cursor: string): [string, string] {
  const match = cursorPatterns[kind].exec(cursor);
  if (!match) throw invalidRequest(`cursor: ${CURSOR_REFUSED}`);
  return [match[1]!, match[2]!];
}

export function decodeProjectCursor(cursor: string): ProjectKey {
  const [value, id] = decodeRaw('projects', cursor);
  return { createdAtMicros: value, id };
}

export function decodeCatalogCursor(kind: 'actors' | 'voices', cursor: string): CatalogKey {
  const [value, id] = decodeRaw(kind, cursor);
  return { sortKey: Number(value), id };
}

// ---- records

const ms = (d: Date) => d.getTime();

function projectRecord(p: Project): z.infer<typeof projectSchema> {
  return { id: p.id, name: p.name, workspace_id: p.workspace_id, created_at: ms(p.created_at), updated_at: ms(p.updated_at) };
}

function actorRecord(a: Actor, baseUrl: string): z.infer<typeof actorSchema> {
  return {
    id: a.id,
    name: a.name,
    age: a.age as z.infer<typeof actorSchema>['age'],
    gender: a.gender as z.infer<typeof actorSchema>['gender'],
    skin_tone: a.skin_tone as z.infer<typeof actorSchema>['skin_tone'],
    is_pro: a.is_pro,
    default_voice_id: a.default_voice_id,
    reference_image_url: mediaUrl(baseUrl, a.reference_image_key),
    preview_video_url: mediaUrl(baseUrl, a.preview_video_key),
    preview_thumbnail_url: mediaUrl(baseUrl, a.preview_thumbnail_key),
  };
}

function voiceRecord(v: Voice, baseUrl: string): z.infer<typeof voiceSchema> {
  return { id: v.id, name: v.name, gender: v.gender, language: v.language, accent: v.accent, preview_url: mediaUrl(baseUrl, v.preview_key) };
}

/** The discovery endpoints, each declared once (routing, validation and the OpenAPI document). */
export const discoveryEndpoints = new Endpoints<AppDeps>()
  .add({
    method: 'get',
    path: '/v1/projects',
    summary: "List the projects of the key's workspace",
    tags: ['Discovery'],
    scope: 'read',
    rateClass: 'poll',
    query: projectsQuery,
    response: z.array(projectSchema),
    responseExtra: nextCursor,
    errors: discoveryErrors,
    async handler({ res, query: q, services: deps }) {
      const { workspaceId } = authOf(res);
      const after = q.cursor ? decodeProjectCursor(q.cursor) : null;
      const result = await listProjectsPage(deps.db, workspaceId, { limit: q.limit ?? DEFAULT_PAGE_LIMIT, after });
      res.json({ data: result.rows.map(projectRecord), next_cursor: result.next ? encodeCursor('projects', result.next) : null });
    },
  })
  .add({
    method: 'get',
    path: '/v1/actors',
    summary: 'List actors',
    tags: ['Discovery'],
    scope: 'read',
    rateClass: 'poll',
    query: actorsQuery,
    response: z.array(actorSchema),
    responseExtra: nextCursor,
    errors: discoveryErrors,
    async handler({ res, query: q, services: deps }) {
      const after = q.cursor ? decodeCatalogCursor('actors', q.cursor) : null;
      const filters = { gender: q.gender, age: q.age, skin_tone: q.skin_tone, is_pro: q.is_pro === undefined ? undefined : q.is_pro === 'true' };
      const result = await listActorsPage(deps.db, { limit: q.limit ?? DEFAULT_PAGE_LIMIT, after, filters });
      const base = publicBaseUrl(deps.config);
      res.json({ data: result.rows.map((a) => actorRecord(a, base)), next_cursor: result.next ? encodeCursor('actors', result.next) : null });
    },
  })
  .add({
    method: 'get',
    path: '/v1/voices',
    summary: 'List voices',
    tags: ['Discovery'],
    scope: 'read',
    rateClass: 'poll',
    query: voicesQuery,
    response: z.array(voiceSchema),
    responseExtra: nextCursor,
    errors: discoveryErrors,
    async handler({ res, query: q, services: deps }) {
      const after = q.cursor ? decodeCatalogCursor('voices', q.cursor) : null;
      const result = await listVoicesPage(deps.db, { limit: q.limit ?? DEFAULT_PAGE_LIMIT, after });
      const base = publicBaseUrl(deps.config);
      res.json({ data: result.rows.map((v) => voiceRecord(v, base)), next_cursor: result.next ? encodeCursor('voices', result.next) : null });
    },
  });

export function createDiscoveryRouter(deps: AppDeps, auth: Auth): Router {
  return discoveryEndpoints.router(deps, auth);
}
