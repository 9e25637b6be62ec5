// Spend limits per API key and per project, per UTC day or month (docs/api/budgets.md).
// `budgets` holds the limits (written by the admin CLI; the app role reads them). `budget_spend` is
// one counter per budget and period: the NET credits charged to jobs created in that period under
// the budget, locked by the creates it admits and adjusted by the refunds and recharges of those
// jobs in the ledger's own transaction. `budget_charges` says which counters a job's charge went
// to, so a later refund adjusts the same period's counter whatever the date then. Threshold
// alerts go through the webhook outbox, whose rows therefore need not belong to a job.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('budgets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('scope', 'text', (c) => c.notNull().check(sql`scope in ('key', 'project')`))
    .addColumn('scope_id', 'text', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull().check(sql`period in ('day', 'month')`))
    .addColumn('limit_credits', 'integer', (c) => c.notNull().check(sql`limit_credits > 0`))
    .addColumn('alert_at', sql`integer[]`, (c) => c.notNull().defaultTo(sql`'{80,100}'`))
    .addColumn('alert_url', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  // The create's "does any budget apply" probe and the one budget per scope and period.
  await sql`create unique index budgets_scope_idx on budgets (workspace_id, scope, scope_id, period)`.execute(db);

  await db.schema
    .createTable('budget_spend')
    .addColumn('budget_id', 'text', (c) => c.notNull().references('budgets.id').onDelete('cascade'))
    .addColumn('period_start', 'timestamptz', (c) => c.notNull())
    .addColumn('spent', 'integer', (c) => c.notNull())
    // The highest alert threshold (percent) already emitted in the period: each fires once.
    .addColumn('alerted_pct', 'integer', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('budget_spend_pkey', ['budget_id', 'period_start'])
    .execute();

  await db.schema
    .createTable('budget_charges')
    .addColumn('job_id', 'text', (c) => c.notNull().references('jobs.id').onDelete('cascade'))
    .addColumn('budget_id', 'text', (c) => c.notNull().references('budgets.id').onDelete('cascade'))
    .addColumn('period_start', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('budget_charges_pkey', ['job_id', 'budget_id'])
    .execute();
  await db.schema.createIndex('budget_charges_budget_idx').on('budget_charges').columns(['budget_id', 'period_start']).execute();

  await db.schema
    .alterTable('webhook_deliveries')
    .alterColumn('job_id', (c) => c.dropNotNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`delete from webhook_deliveries where job_id is null`.execute(db);
  await db.schema
    .alterTable('webhook_deliveries')
    .alterColumn('job_id', (c) => c.setNotNull())
    .execute();
  await db.schema.dropTable('budget_charges').execute();
  await db.schema.dropTable('budget_spend').execute();
  await db.schema.dropTable('budgets').execute();
}
