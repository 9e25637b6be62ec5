// Fair share across workspaces, priorities and deadlines per job:
// - `workspaces.fair_share_weight`: the workspace's weight on every task queue its jobs wait in (its
//   Temporal fairness weight; a plan tier set with the admin CLI). 1 is the default share.
// - `workspaces.high_priority_allowed`: whether the workspace's jobs may ask for `priority: high`.
// - `jobs.priority`: the job's priority (high / normal / low), its Temporal priority key.
// - `jobs.fairness_weight`: the workspace's weight when the job was created. Temporal applies a weight
//   when a task is scheduled, so the job keeps the one it started with; the reconciler's late start
//   uses the same one.
// - `jobs.deadline_at`: the customer's `deadline_seconds` as a moment; null: no deadline.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('workspaces')
    .addColumn('fair_share_weight', 'double precision', (c) =>
      c
        .notNull()
        .defaultTo(1)
        .check(sql`fair_share_weight between 0.001 and 1000`),
    )
    .addColumn('high_priority_allowed', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
  await db.schema
    .alterTable('jobs')
    .addColumn('priority', 'text', (c) =>
      c
        .notNull()
        .defaultTo('normal')
        .check(sql`priority in ('high', 'normal', 'low')`),
    )
    .addColumn('fairness_weight', 'double precision', (c) => c.notNull().defaultTo(1))
    .addColumn('deadline_at', 'timestamptz')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').dropColumn('deadline_at').dropColumn('fairness_weight').dropColumn('priority').execute();
  await db.schema.alterTable('workspaces').dropColumn('high_priority_allowed').dropColumn('fair_share_weight').execute();
}
