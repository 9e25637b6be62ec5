// bench-scale's event log reads (scripts/bench/scale.ts): the measured workspace's log ends, the
// GET /v1/events paths timed, and the plan of the page query the gateway sends for them.
import { CompiledQuery, sql } from 'kysely';
import { DEFAULT_PAGE_LIMIT } from '../../api/validate.js';
import { workspaceEventsQuery } from '../../db/repos/workspace-events.js';
import type { Side } from './scale-measure.js';

/** One GET /v1/events page: after a number, optionally one exact type. */
export interface EventPage {
  after: number;
  types?: string;
}

/** The oldest and newest numbers the measured workspace's log holds. */
export async function logEnds(s: Side): Promise<{ first: number; last: number }> {
  const r = await sql<{ first: string | null; last: string | null }>`
    select min(seq)::text as first, max(seq)::text as last from workspace_events where workspace_id = ${s.tenant.workspaceId}`.execute(s.db);
  return { first: Number(r.rows[0]?.first ?? 1), last: Number(r.rows[0]?.last ?? 0) };
}

export const midLog = (e: { first: number; last: number }) => Math.floor((e.first + e.last) / 2);

export const eventsPath = (p: EventPage) => `/v1/events?after=${p.after}${p.types ? `&types=${p.types}` : ''}`;

/** EXPLAIN (ANALYZE, BUFFERS) of the page's query as listWorkspaceEvents sends it. */
export async function explainEventsPage(s: Side, p: EventPage): Promise<string[]> {
  const types = p.types ? { exact: [p.types], prefixes: [] } : undefined;
  const q = workspaceEventsQuery(s.db, s.tenant.workspaceId, { after: p.after, limit: DEFAULT_PAGE_LIMIT, types }).compile();
  const r = await s.db.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain (analyze, buffers) ${q.sql}`, [...q.parameters]));
  return r.rows.map((row) => row['QUERY PLAN']);
}

/** What a plan read: the top node's rows, the 8 kB buffers it touched (hit + read), its execution ms. */
export function planFigures(lines: string[]): { rows: string; buffers: number; ms: string } {
  const plan = lines.join('\n');
  const buffers = [...plan.matchAll(/Buffers: shared(?: hit=(\d+))?(?: read=(\d+))?/g)][0];
  return {
    rows: /rows=(\d+) loops=1\)/.exec(plan)?.[1] ?? '?',
    buffers: Number(buffers?.[1] ?? 0) + Number(buffers?.[2] ?? 0),
    ms: /Execution Time: ([\d.]+)/.exec(plan)?.[1] ?? '?',
  };
}
