// Webhook endpoints the customer manages (issue 56, docs/api/webhook-endpoints.md):
// - `webhook_endpoints`: a workspace's receivers, each with its URL, the event types it subscribes
//   to (exact names or the patterns job.*, pipeline.*, budget.*, balance.*) and an enabled flag.
//   Each has its signing secret, encrypted like `webhook_secrets` (shared/webhooks/signing.ts, the
//   secret's id and workspace as associated data); a rotation keeps the replaced one as `previous_*`
//   until `previous_expires_at`: until then both sign (the overlap window; at most two, as Stripe).
//   Customer-managed through the gateway, so unlike `webhook_secrets` the app role writes them.
// - `webhook_deliveries.endpoint_id`: the endpoint a delivery goes to (null: a per-request
//   webhook_url, a budget's or the balance alerts' URL). `event_id`: the event the delivery carries,
//   sent as `webhook-id`; the same for the per-request delivery and every endpoint's, so a receiver
//   sees one id per event whichever way it came (and the event log, issue 56, uses it). A delivery's
//   own `id` stays unique: a per-request one keeps the event id, an endpoint's is
//   `<event id>_<endpoint id>`. A before-insert trigger sets `event_id` to `id` when an inserter
//   leaves it out, so every path that wrote the outbox before keeps writing it unchanged.
// - `webhook_endpoint_fanout(...)`: one delivery per enabled endpoint of the workspace subscribed to
//   the event, called in the transaction that writes the event (the job trigger below, the balance
//   trigger below, db/repos/pipeline-events.ts, db/repos/budgets.ts).
// - `jobs_webhook_event` (0007) and `workspaces_balance_low` (0100) replaced to fan out too, also for
//   a job without webhook_url and for thresholds without an alert URL. Cost on the hot path: a job's
//   move to generating, completed or failed probes webhook_endpoints_enabled_idx once (a workspace
//   without endpoints: an empty index range), where before a job without webhook_url did nothing.
import { sql, type Kysely } from 'kysely';

// Over 80 lines: a migration is the record of one schema step, its DDL in the order it runs; applied
// databases hold it, so it is never edited or split after it ships.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('event_types', sql`text[]`, (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    // The signing secret (AES-256-GCM, never in clear) and, during a rotation's overlap, the one it
    // replaced, which signs too until previous_expires_at.
    .addColumn('secret_id', 'text', (c) => c.notNull())
    .addColumn('secret_encrypted', 'text', (c) => c.notNull())
    .addColumn('previous_secret_id', 'text')
    .addColumn('previous_secret_encrypted', 'text')
    .addColumn('previous_expires_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('webhook_endpoints_event_types_bounded', sql`cardinality(event_types) between 1 and 20`)
    .execute();
  await db.schema.createIndex('webhook_endpoints_workspace_idx').on('webhook_endpoints').columns(['workspace_id', 'created_at']).execute();
  await db.schema.createIndex('webhook_endpoints_enabled_idx').on('webhook_endpoints').column('workspace_id').where(sql.ref('enabled'), '=', true).execute();

  // No foreign key: a deleted endpoint's deliveries stay in the log naming it.
  await sql`alter table webhook_deliveries add column endpoint_id text, add column event_id text`.execute(db);
  // The outbox is swept of finished events (WEBHOOK retention), so this rewrites a bounded table.
  await sql`update webhook_deliveries set event_id = id`.execute(db);
  await sql`alter table webhook_deliveries alter column event_id set not null`.execute(db);
  await sql`create index webhook_deliveries_endpoint_idx on webhook_deliveries (endpoint_id, created_at desc, id desc) where endpoint_id is not null`.execute(
    db,
  );
  await sql`
    create function webhook_deliveries_event_id() returns trigger language plpgsql as $$
    begin
      new.event_id := coalesce(new.event_id, new.id);
      return new;
    end $$`.execute(db);
  await sql`
    create trigger webhook_deliveries_event_id before insert on webhook_deliveries
      for each row execute function webhook_deliveries_event_id()`.execute(db);

  await sql`
    create function webhook_endpoint_fanout(p_workspace text, p_type text, p_event_id text, p_job_id text, p_data jsonb)
      returns integer language plpgsql as $$
    declare
      n integer;
    begin
      insert into webhook_deliveries (id, event_id, endpoint_id, job_id, workspace_id, type, url, job)
        select p_event_id || '_' || e.id, p_event_id, e.id, p_job_id, p_workspace, p_type, e.url, p_data
        from webhook_endpoints e
        where e.workspace_id = p_workspace and e.enabled
          and (p_type = any(e.event_types) or split_part(p_type, '.', 1) || '.*' = any(e.event_types))
        on conflict (id) do nothing;
      get diagnostics n = row_count;
      if n > 0 then
        perform pg_notify('webhook_deliveries', p_event_id);
      end if;
      return n;
    end $$`.execute(db);

  await sql`
    create or replace function jobs_webhook_event() returns trigger language plpgsql as $$
    declare
      event text := 'job.' || new.status;
      event_id text := 'whk_' || new.id || '_' || new.event_seq;
      snapshot jsonb;
      per_request boolean;
      subscribed boolean;
    begin
      if new.status not in ('generating', 'completed', 'failed') then
        return null;
      end if;
      per_request := new.webhook_url is not null and new.status = any(coalesce(new.webhook_events, '{}'));
      subscribed := exists (select 1 from webhook_endpoints e where e.workspace_id = new.workspace_id and e.enabled
                              and (event = any(e.event_types) or 'job.*' = any(e.event_types)));
      if not per_request and not subscribed then
        return null;
      end if;
      select to_jsonb(j) into snapshot from jobs j where j.id = new.id;
      if per_request then
        insert into webhook_deliveries (id, event_id, job_id, workspace_id, type, url, job)
          values (event_id, event_id, new.id, new.workspace_id, event, new.webhook_url, snapshot)
          on conflict (id) do nothing;
        perform pg_notify('webhook_deliveries', event_id);
      end if;
      if subscribed then
        perform webhook_endpoint_fanout(new.workspace_id, event, event_id, new.id, snapshot);
      end if;
      return null;
    end $$`.execute(db);

  await replaceBalanceLow(db, { eventLog: false });
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // The functions as 0100 and 0007 left them.
  await sql`
    create or replace function workspaces_balance_low() returns trigger language plpgsql as $$
    declare
      alert record;
      t integer;
      event_id text;
    begin
      select thresholds, url into alert from balance_alerts where workspace_id = new.id;
      if not found or alert.url is null then
        return null;
      end if;
      foreach t in array alert.thresholds loop
        if old.credits >= t and new.credits < t then
          event_id := 'whk_bal_' || replace(gen_random_uuid()::text, '-', '');
          insert into webhook_deliveries (id, job_id, workspace_id, type, url, job)
            values (event_id, null, new.id, 'balance.low', alert.url,
                    jsonb_build_object('workspace_id', new.id, 'threshold', t, 'available', new.credits,
                                       'previous', old.credits, 'unit', 'credits',
                                       'crossed_at', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')));
          perform pg_notify('webhook_deliveries', event_id);
        end if;
      end loop;
      return null;
    end $$`.execute(db);
  await sql`
    create or replace function jobs_webhook_event() returns trigger language plpgsql as $$
    declare
      event text := 'job.' || new.status;
      event_id text := 'whk_' || new.id || '_' || new.event_seq;
      snapshot jsonb;
    begin
      if new.status not in ('generating', 'completed', 'failed') or new.webhook_url is null
         or not (new.status = any(coalesce(new.webhook_events, '{}'))) then
        return null;
      end if;
      select to_jsonb(j) into snapshot from jobs j where j.id = new.id;
      insert into webhook_deliveries (id, job_id, workspace_id, type, url, job)
        values (event_id, new.id, new.workspace_id, event, new.webhook_url, snapshot)
        on conflict (id) do nothing;
      perform pg_notify('webhook_deliveries', event_id);
      return null;
    end $$`.execute(db);
  await sql`drop function webhook_endpoint_fanout(text, text, text, text, jsonb)`.execute(db);
  await sql`drop trigger webhook_deliveries_event_id on webhook_deliveries`.execute(db);
  await sql`drop function webhook_deliveries_event_id()`.execute(db);
  // An endpoint's deliveries stay (their id still unique), no longer naming the endpoint.
  await sql`drop index webhook_deliveries_endpoint_idx`.execute(db);
  await sql`alter table webhook_deliveries drop column endpoint_id, drop column event_id`.execute(db);
  await db.schema.dropTable('webhook_endpoints').execute();
}

/**
 * workspaces_balance_low (0100_balance_alerts) with the fan-out to endpoints; with `eventLog`
 * (0120_workspace_events) each crossing is also one event of the workspace's log, with the
 * delivery's id, whether or not anyone is sent it.
 */
export async function replaceBalanceLow(db: Kysely<unknown>, opts: { eventLog: boolean }): Promise<void> {
  const eventLog = opts.eventLog
    ? sql.raw(`          insert into workspace_events (id, workspace_id, type, subject_id, data)
            values (event_id, new.id, 'balance.low', new.id, payload) on conflict (id) do nothing;
`)
    : sql.raw('');
  await sql`
    create or replace function workspaces_balance_low() returns trigger language plpgsql as $$
    declare
      alert record;
      t integer;
      event_id text;
      payload jsonb;
    begin
      select thresholds, url into alert from balance_alerts where workspace_id = new.id;
      if not found then
        return null;
      end if;
      foreach t in array alert.thresholds loop
        if old.credits >= t and new.credits < t then
          event_id := 'whk_bal_' || replace(gen_random_uuid()::text, '-', '');
          payload := jsonb_build_object('workspace_id', new.id, 'threshold', t, 'available', new.credits,
                                        'previous', old.credits, 'unit', 'credits',
                                        'crossed_at', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
          if alert.url is not null then
            insert into webhook_deliveries (id, event_id, job_id, workspace_id, type, url, job)
              values (event_id, event_id, null, new.id, 'balance.low', alert.url, payload);
            perform pg_notify('webhook_deliveries', event_id);
          end if;
          perform webhook_endpoint_fanout(new.id, 'balance.low', event_id, null, payload);
${eventLog}        end if;
      end loop;
      return null;
    end $$`.execute(db);
}
