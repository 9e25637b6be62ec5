// Webhooks (issue 13): a job may name a `webhook_url` and the `webhook_events` it wants; each
// workspace has signing secrets (stored encrypted, see shared/webhooks/signing.ts); and every
// requested status move of a job writes one row of `webhook_deliveries` — the outbox the worker's
// dispatcher turns into one delivery workflow per row.
//
// The outbox row is written by a trigger, in the transaction that moves the status, so every path
// that moves a job (the pipeline's activities, a cancel through the gateway, the reconciler) emits
// exactly one event per move: an activity retried after its commit moves nothing and emits nothing,
// and an operator Reset that re-runs a failed job emits the moves it really makes again. The event
// id (`whk_<job id>_<event_seq>`) is the Standard Webhooks `webhook-id` and the delivery workflow id.
// The trigger is deferred to commit so its snapshot of the job (the payload's `data`) holds what the
// same transaction wrote after the status (the phase of a `generating` job).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('jobs')
    .addColumn('webhook_url', 'text')
    .addColumn('webhook_events', sql`text[]`)
    .execute();

  await db.schema
    .createTable('webhook_secrets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    // AES-256-GCM of the secret: never stored in clear.
    .addColumn('secret_encrypted', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    // Set when a newer secret replaces it: it keeps signing until then (the rotation grace period).
    .addColumn('expires_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('webhook_secrets_workspace_idx').on('webhook_secrets').columns(['workspace_id', 'created_at']).execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('job_id', 'text', (c) => c.notNull().references('jobs.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    // The job row as the move committed it; the payload's `data` is presented from it.
    .addColumn('job', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('dispatched_at', 'timestamptz')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_status', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('delivered_at', 'timestamptz')
    .addColumn('failed_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('webhook_deliveries_job_idx').on('webhook_deliveries').columns(['job_id', 'created_at']).execute();
  await db.schema
    .createIndex('webhook_deliveries_undispatched_idx')
    .on('webhook_deliveries')
    .column('created_at')
    .where(sql.ref('dispatched_at'), 'is', null)
    .execute();

  await sql`
    create function jobs_webhook_event() returns trigger language plpgsql as $$
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
  await sql`
    create constraint trigger jobs_webhook_event_on_status after update on jobs
      deferrable initially deferred
      for each row
      when (old.status is distinct from new.status)
      execute function jobs_webhook_event()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger jobs_webhook_event_on_status on jobs`.execute(db);
  await sql`drop function jobs_webhook_event()`.execute(db);
  await db.schema.dropTable('webhook_deliveries').execute();
  await db.schema.dropTable('webhook_secrets').execute();
  await db.schema.alterTable('jobs').dropColumn('webhook_events').dropColumn('webhook_url').execute();
}
