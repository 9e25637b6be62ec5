// Low-balance alerts (docs/api/balance.md). `balance_alerts` holds a workspace's owner-set
// thresholds (credits) and the URL their `balance.low` events go to; the owner writes it through
// the gateway (PUT /v1/balance/alerts), so the app role may write it.
//
// The event is written by a trigger on the balance itself: every path that lowers
// `workspaces.credits` (a create's charge, a recharge, an operator's deduct) fires it in its own
// transaction, and none can forget to. A charge locks the workspace row, so concurrent charges
// move the balance one after another and each sees the balance the previous one left: a threshold
// t is crossed by exactly the charge that takes the balance from ≥ t to < t, which writes one event
// to the webhook outbox. A grant or refund lifting the balance back to ≥ t arms it again; nothing
// needs remembering between crossings.
//
// The trigger's WHEN skips every update that does not lower the balance; one that does costs one
// primary-key probe of `balance_alerts` inside the charge's own statement (no round trip).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('balance_alerts')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey().references('workspaces.id').onDelete('cascade'))
    .addColumn('thresholds', sql`integer[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn('url', 'text')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('balance_alerts_thresholds_bounded', sql`cardinality(thresholds) <= 10 and 0 < all(thresholds)`)
    .execute();

  await sql`
    create function workspaces_balance_low() returns trigger language plpgsql as $$
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
    create trigger workspaces_balance_low after update of credits on workspaces
      for each row
      when (new.credits < old.credits)
      execute function workspaces_balance_low()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger workspaces_balance_low on workspaces`.execute(db);
  await sql`drop function workspaces_balance_low()`.execute(db);
  await db.schema.dropTable('balance_alerts').execute();
}
