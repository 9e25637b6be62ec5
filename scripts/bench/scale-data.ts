// bench-scale's databases (scripts/bench/scale.ts): a fresh database per side, the million-job
// history and the in-flight rows, all written by Postgres itself.
import pg from 'pg';
import { sql } from 'kysely';
import { createDb, defaultDbTimeouts, type Database } from '../../db/index.js';
import { migrateToLatest } from '../../db/migrate.js';
import type { Tenant } from '../../test/support/stack.js';

export const WORKSPACES = 1_000;
export const HOLD_LATENCY_MS = 600_000; // the longest latency the local renderer takes

export function dbUrl(name: string): string {
  const u = new URL(process.env.DATABASE_URL!);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * The jobs table's per-row insert triggers, off while a loader writes rows by the hundred thousand:
 * one NOTIFY per row would only fill the notification queue, and the event log's rows are written
 * in bulk (loadEventLog) rather than one deferred trigger per job.
 */
async function jobInsertTriggers(db: Database, act: 'enable' | 'disable'): Promise<void> {
  await sql.raw(`alter table jobs ${act} trigger jobs_event_on_insert`).execute(db);
  await sql.raw(`alter table jobs ${act} trigger jobs_workspace_event_on_insert`).execute(db);
}

export async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: dbUrl('postgres') });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

export async function freshDatabase(name: string): Promise<Database> {
  await admin(async (c) => {
    await c.query(`drop database if exists ${name} with (force)`);
    await c.query(`create database ${name}`);
  });
  // The loader writes a million rows per statement: no statement or lock timeout on its pool.
  const db = createDb(dbUrl(name), 20, {}, { ...defaultDbTimeouts, statementMs: 0, lockMs: 0 });
  await migrateToLatest(db);
  return db;
}

/**
 * Finished jobs of the measured workspace (`count` of them, two projects) and, with `others`, of
 * 999 more workspaces: kinds, models and statuses cycle, created over the last 90 days (the newest an
 * hour ago), each with its ledger rows (charge; refund when failed), one in ten with a webhook whose
 * delivered event is in the outbox while within its 7-day retention, its three events in the
 * workspace's log while within the log's 30-day retention, and an idempotency key for those created
 * within its 24 h window.
 */
export async function loadHistory(db: Database, w: { tenant: Tenant; project2: string }, count: number, others: number): Promise<void> {
  const total = count + others;
  if (others > 0) {
    await sql`insert into workspaces (id, name, credits) select 'ws_b' || lpad(g::text, 4, '0'), 'bench ' || g, 1000000 from generate_series(1, ${WORKSPACES - 1}::integer) g`.execute(
      db,
    );
    await sql`insert into projects (id, workspace_id, name) select 'prj_b' || lpad(g::text, 4, '0'), 'ws_b' || lpad(g::text, 4, '0'), 'bench' from generate_series(1, ${WORKSPACES - 1}::integer) g`.execute(
      db,
    );
  }
  // Indexes are built once after the load (a sort each) rather than entry by entry during it: the
  // definitions are read from the migrated schema, so they are exactly the migrations' own.
  const indexes = (
    await sql<{ name: string; def: string }>`
      select indexname as name, indexdef as def from pg_indexes
      where schemaname = 'public' and tablename in ('jobs', 'credit_ledger', 'webhook_deliveries', 'idempotency_keys', 'workspace_events')
        and indexname not in (select conname from pg_constraint)`.execute(db)
  ).rows;
  for (const i of indexes) await sql.raw(`drop index ${i.name}`).execute(db);
  // One NOTIFY per inserted row would only fill the notification queue.
  await jobInsertTriggers(db, 'disable');
  await sql`
    insert into jobs (id, kind, workspace_id, project_id, api_key_id, model, status, params, error, price, outputs, provider_ref,
                      workflow_started, status_run_id, created_at, updated_at, started_at, finished_at, phase, percent, webhook_url, webhook_events)
    select id, kind, ws, prj, null, model, status,
           jsonb_build_object('prompt', 'a bench prompt about a lighthouse at dusk, number ' || g, 'aspect_ratio', '16:9', 'count', 1, 'duration', 5,
                              'resolution', '720p', 'actor_id', 'act', 'voice_id', 'voice', 'script', 'hello there', 'provider', 'local', 'deadline_seconds', 600),
           case when status = 'failed' then '{"code": "generation_failed", "message": "the provider reported the generation as failed"}'::jsonb end,
           4,
           case when status = 'completed' then jsonb_build_array(jsonb_build_object('key', 'jobs/' || id || '/tok/output-1.png', 'content_type', 'image/png', 'size', 123456)) end,
           jsonb_build_object('provider', 'local', 'jobId', id),
           true, 'run-' || g, created, created + interval '40 seconds', created + interval '1 second', created + interval '40 seconds',
           status, case when status = 'completed' then 100 end,
           case when g % 10 = 0 then 'https://hooks.example.com/mediagen' end,
           case when g % 10 = 0 then array['completed', 'failed'] end
    from (
      select g,
             (array['img', 'vid', 'rpl', 'tlk'])[1 + g % 4] || '_bench' || lpad(g::text, 8, '0') as id,
             (array['image', 'video', 'replace_actor', 'talking_actor'])[1 + g % 4] as kind,
             (array['nano-banana-2', 'sora-2', 'replace-actor', 'talking-actor', 'gpt-image-1.5', 'kling-3.0', 'replace-actor', 'talking-actor'])[1 + g % 8] as model,
             case when g % 7 = 3 then 'failed' else 'completed' end as status,
             case when g <= ${count} then ${w.tenant.workspaceId} else 'ws_b' || lpad((1 + g % ${WORKSPACES - 1})::text, 4, '0') end as ws,
             case when g <= ${count} then (case when g % 10 = 5 then ${w.project2} else ${w.tenant.projectId} end)
                  else 'prj_b' || lpad((1 + g % ${WORKSPACES - 1})::text, 4, '0') end as prj,
             now() - interval '1 hour' - (g::double precision / ${total}) * interval '90 days' as created
      from generate_series(1, ${total}::integer) g
    ) j`.execute(db);
  await jobInsertTriggers(db, 'enable');
  await loadLabels(db, others === 0);
  await sql`
    insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason, created_at)
    select workspace_id, id, 1, -price, 'charge', created_at from jobs where id like '%\\_bench%'`.execute(db);
  await sql`
    insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason, created_at)
    select workspace_id, id, 2, price, 'refund', finished_at from jobs where id like '%\\_bench%' and status = 'failed'`.execute(db);
  await sql`
    insert into webhook_deliveries (id, job_id, workspace_id, type, url, job, created_at, dispatched_at, attempts, last_status, delivered_at)
    select 'whk_' || id || '_3', id, workspace_id, 'job.' || status, webhook_url, to_jsonb(j), finished_at, finished_at, 1, 200, finished_at
    from jobs j where webhook_url is not null and created_at > now() - interval '7 days'`.execute(db);
  await loadEventLog(db);
  await sql`
    insert into idempotency_keys (workspace_id, key, operation, fingerprint, claim_token, status, response_status, response_body, locked_at, created_at)
    select workspace_id, 'key-' || id, 'POST /v1/images/generate', md5(id), md5(id || 'claim'), 'completed', 200,
           jsonb_build_object('data', jsonb_build_object('id', id, 'status', 'pending')), created_at, created_at
    from jobs where id like '%\\_bench%' and created_at > now() - interval '24 hours'`.execute(db);
  await db.connection().execute(async (c) => {
    await sql`set maintenance_work_mem = '256MB'`.execute(c);
    for (const i of indexes) await sql.raw(i.def).execute(c);
  });
  await sql`analyze`.execute(db);
}

/**
 * Every history job's labels (0115_labels), as a create writes them. With a history of a million:
 * tag `team-<n % 10>` (10% of the jobs each), tag `rare` on every 1000th, metadata customer
 * `cus_<n % 100>` (1% each). In the empty database (`dense`, 400 jobs) each filter the bench times
 * still fills a page of 50, so both sides answer the same page and only the history differs: tag
 * `team-<n % 5>` (80 jobs for team-3), `rare` on every 8th (50), customer `cus_13` on the jobs with
 * n % 5 of 3 or 4 (160, of which team-3's 80), `cus_<n % 100>` on the others.
 */
async function loadLabels(db: Database, dense: boolean): Promise<void> {
  const [teams, rareEvery] = dense ? [5, 8] : [10, 1000];
  const customer = dense ? sql`case when n % 5 in (3, 4) then 'cus_13' else 'cus_' || (n % 100) end` : sql`'cus_' || (n % 100)`;
  await sql`
    update jobs set tags = array['team-' || (n % ${teams}::integer)] || case when n % ${rareEvery}::integer = 0 then array['rare'] else array[]::text[] end,
                    metadata = jsonb_build_object('customer', ${customer})
    from (select id as jid, substring(id from 10)::int as n from jobs where id like '%\\_bench%') b where id = b.jid`.execute(db);
  await sql`
    insert into job_labels (workspace_id, label, created_at, job_id)
    select workspace_id, l, created_at, id from jobs
      cross join lateral (select unnest(tags.t) as l from (select array(select 't:' || x from unnest(jobs.tags) x) || array['m:customer=' || (metadata->>'customer')]) tags(t)) ls
    where id like '%\\_bench%'`.execute(db);
}

/** In-flight rows without a workflow (a busy deployment's other running jobs), spread over the other workspaces. */
export async function loadInFlightRows(db: Database, count: number): Promise<void> {
  if (count <= 0) return;
  await jobInsertTriggers(db, 'disable');
  await sql`
    insert into jobs (id, kind, workspace_id, project_id, model, status, params, price, provider_ref, workflow_started, status_run_id, created_at, updated_at, started_at, phase, percent)
    select 'vid_flight' || lpad(g::text, 6, '0'), 'video', 'ws_b' || lpad((1 + g % ${WORKSPACES - 1})::text, 4, '0'), 'prj_b' || lpad((1 + g % ${WORKSPACES - 1})::text, 4, '0'),
           'sora-2', 'generating', '{"prompt": "in flight", "aspect_ratio": "16:9", "duration": 5, "resolution": "720p", "provider": "local", "deadline_seconds": 600}',
           4, '{"provider": "local"}', true, 'run-flight-' || g, now() - g * interval '10 ms', now(), now(), 'generating', 40
    from generate_series(1, ${count}::integer) g`.execute(db);
  await sql`
    insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason)
    select workspace_id, id, 1, -price, 'charge' from jobs where id like 'vid\\_flight%'`.execute(db);
  await jobInsertTriggers(db, 'enable');
  await sql`analyze jobs`.execute(db);
}

/**
 * A workspace's month of usage, the same in both databases: `count` jobs over the last 30 days
 * (kinds, models and statuses cycling, created by its key), each charged and, when failed,
 * refunded 40 s later.
 */
export async function loadUsageMonth(db: Database, t: Tenant, count: number): Promise<void> {
  await jobInsertTriggers(db, 'disable');
  await sql`
    insert into jobs (id, kind, workspace_id, project_id, api_key_id, model, status, params, price, workflow_started, created_at, updated_at, finished_at)
    select 'use_' || lpad(g::text, 8, '0'), (array['image', 'video', 'replace_actor', 'talking_actor'])[1 + g % 4], ${t.workspaceId}, ${t.projectId}, ${t.apiKeyId},
           (array['nano-banana-2', 'sora-2', 'replace-actor', 'talking-actor'])[1 + g % 4], case when g % 7 = 3 then 'failed' else 'completed' end,
           '{"prompt": "usage", "provider": "local", "deadline_seconds": 600}', 4, true, created, created + interval '40 seconds', created + interval '40 seconds'
    from (select g, now() - interval '1 hour' - (g::double precision / ${count}) * interval '29 days' as created from generate_series(1, ${count}::integer) g) s`.execute(
    db,
  );
  await jobInsertTriggers(db, 'enable');
  await sql`
    insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason, created_at)
    select workspace_id, id, 1, -price, 'charge', created_at from jobs where id like 'use\\_%'`.execute(db);
  await sql`
    insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason, created_at)
    select workspace_id, id, 2, price, 'refund', finished_at from jobs where id like 'use\\_%' and status = 'failed'`.execute(db);
  await sql`vacuum analyze credit_ledger`.execute(db);
  await sql`analyze jobs`.execute(db);
}

/** One workspace holding `count` failed jobs (charged and refunded) and another holding 10, in a database of their own. */
export async function loadFailedHistory(db: Database, big: Tenant, small: Tenant, count: number): Promise<void> {
  await jobInsertTriggers(db, 'disable');
  for (const [t, n, prefix] of [
    [big, count, 'flb'],
    [small, 10, 'fls'],
  ] as const) {
    await sql`
      insert into jobs (id, kind, workspace_id, project_id, api_key_id, model, status, params, error, price, workflow_started, created_at, updated_at, finished_at)
      select ${prefix} || '_' || lpad(g::text, 8, '0'), (array['image', 'video', 'replace_actor', 'talking_actor'])[1 + g % 4], ${t.workspaceId}, ${t.projectId}, ${t.apiKeyId},
             (array['nano-banana-2', 'sora-2', 'replace-actor', 'talking-actor'])[1 + g % 4], 'failed',
             '{"prompt": "failed", "provider": "local", "deadline_seconds": 600}',
             '{"code": "generation_failed", "message": "the provider reported the generation as failed"}', 4, true,
             now() - g * interval '5 seconds', now() - g * interval '5 seconds', now() - g * interval '5 seconds'
      from generate_series(1, ${n}::integer) g`.execute(db);
  }
  await jobInsertTriggers(db, 'enable');
  await sql`
    insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason, created_at)
    select workspace_id, id, s, case when s = 1 then -price else price end, case when s = 1 then 'charge' else 'refund' end, created_at
    from jobs, generate_series(1, 2) s where id like 'fl%'`.execute(db);
  await sql`vacuum analyze`.execute(db);
}

/**
 * The event log of the loaded history within EVENTS_RETENTION_DAYS' default (30 days): each job's
 * job.pending, job.generating and final move, numbered per workspace in the order they happened
 * (as the commits would have), and each workspace's counter at its last number.
 */
async function loadEventLog(db: Database): Promise<void> {
  await sql`
    insert into workspace_events (id, workspace_id, seq, type, subject_id, data, created_at)
    select id, workspace_id, row_number() over (partition by workspace_id order by at, id), type, job_id, data, at
    from (
      select 'whk_' || j.id || '_' || m.n as id, j.workspace_id, 'job.' || m.status as type, j.id as job_id, to_jsonb(j) as data,
             case m.n when 1 then j.created_at when 2 then j.started_at else j.finished_at end as at
      from jobs j cross join lateral (values (1, 'pending'), (2, 'generating'), (3, j.status)) m(n, status)
      where j.id like '%\\_bench%' and j.created_at > now() - interval '30 days'
    ) e`.execute(db);
  await sql`
    insert into workspace_event_counters (workspace_id, last_seq)
    select workspace_id, max(seq) from workspace_events group by workspace_id
    on conflict (workspace_id) do update set last_seq = excluded.last_seq`.execute(db);
}
