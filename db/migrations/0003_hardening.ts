// Legal status moves: the workflow run that made a job's last status move, so a failed job can be
// moved back to `generating` only by a different run (an operator reset), never by a late activity
// of the run that failed it, nor at all when no workflow failed it (a cancel before any workflow).
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('status_run_id', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').dropColumn('status_run_id').execute();
}
