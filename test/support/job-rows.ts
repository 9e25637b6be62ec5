// Many job rows at once, written by Postgres itself (generate_series): for the job-list index test
// and the EXPLAIN script. Rows cycle through the four kinds, four statuses and a few models, one a
// second apart going back from now, so every filter and page of the lists has rows to find.
import { CompiledQuery, sql } from 'kysely';
import { jobsPageQuery, type JobListOptions } from '../../db/repos/job-lists.js';
import type { Database } from '../../db/index.js';

export async function bulkInsertJobs(db: Database, t: { workspaceId: string; projectId: string }, count: number, idPrefix = 'bulk'): Promise<void> {
  // One NOTIFY per inserted row would only fill the notification queue, and one event-log row per job
  // (0120's deferred trigger: a snapshot, an insert and the workspace counter's update each) took most
  // of a 100,000-row insert's five minutes on a loaded CI: no caller reads these rows' events, and this
  // database is the suite's own.
  await sql`alter table jobs disable trigger jobs_event_on_insert`.execute(db);
  await sql`alter table jobs disable trigger jobs_workspace_event_on_insert`.execute(db);
  try {
    await sql`
      insert into jobs (id, kind, workspace_id, project_id, model, status, params, price, workflow_started, created_at, updated_at)
      select ${idPrefix} || '_' || lpad(g::text, 8, '0'),
             (array['image', 'video', 'replace_actor', 'talking_actor'])[1 + g % 4],
             ${t.workspaceId}, ${t.projectId},
             (array['nano-banana-2', 'sora-2', 'replace-actor', 'talking-actor'])[1 + g % 4],
             (array['completed', 'failed', 'completed', 'pending'])[1 + (g / 4) % 4],
             jsonb_build_object('prompt', 'bulk ' || g, 'aspect_ratio', '1:1', 'count', 1, 'duration', 4, 'resolution', '720p',
                                'actor_id', 'act', 'voice_id', 'voice', 'script', 'hello'),
             1, true,
             now() - g * interval '1 second', now() - g * interval '1 second'
      from generate_series(1, ${count}::integer) g`.execute(db);
  } finally {
    await sql`alter table jobs enable trigger jobs_event_on_insert`.execute(db);
    await sql`alter table jobs enable trigger jobs_workspace_event_on_insert`.execute(db);
  }
  await sql`analyze jobs`.execute(db);
}

/** The EXPLAIN (ANALYZE) plan of a job-list page query exactly as the gateway sends it, as text lines. */
export async function explainJobListPage(db: Database, workspaceId: string, opts: JobListOptions): Promise<string[]> {
  const q = jobsPageQuery(db, workspaceId, opts).compile();
  const r = await db.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain (analyze, buffers) ${q.sql}`, [...q.parameters]));
  return r.rows.map((row) => row['QUERY PLAN']);
}
