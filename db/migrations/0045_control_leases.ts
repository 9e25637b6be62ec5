// The control fleet's leases (worker/control-lease.ts): one row per control loop per deployment
// (the reconcilers, webhook outbox dispatch, upload sweeps, route probes, the fleet-wide gauges,
// build promotion). The row names its holder (one worker process) and the build it runs, and
// expires unless renewed; `epoch` grows by one at every change of holder, so a write fenced by
// the lease (control-lease.ts assertLeaseHeld) fails once another process has taken over.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table control_leases (
      deployment text not null,
      loop text not null,
      holder text not null,
      build_id text,
      epoch bigint not null default 1,
      acquired_at timestamptz not null default now(),
      expires_at timestamptz not null,
      primary key (deployment, loop)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists control_leases`.execute(db);
}
