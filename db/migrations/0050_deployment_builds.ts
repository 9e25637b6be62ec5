// Which builds of each Worker Deployment were ever its Current Version, kept by us rather than read
// from the Temporal server: the server forgets a deleted version, and a worker of that build that
// polls again is registered as a new, inactive version with a fresh create time. The promoter
// (worker/promoter.ts) never promotes a build listed here by itself; an operator's promote does.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table deployment_builds (
      deployment_name text not null,
      build_id text not null,
      first_current_at timestamptz not null default now(),
      last_seen_current_at timestamptz not null default now(),
      primary key (deployment_name, build_id)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists deployment_builds`.execute(db);
}
