// A workspace with a year of heavy usage, written straight to the database: `n` charged jobs spread
// over 2026 (one every few minutes), each with its ledger charge. For the usage bounds test and
// benchmark, where a year-long GET /v1/usage must cost real work.
import { sql } from 'kysely';
import type { Database } from '../../db/index.js';
import { insertImageJob, type Tenant } from './stack.js';

export async function seedYearOfUsage(db: Database, t: Tenant, n: number): Promise<void> {
  const template = await insertImageJob(db, t);
  const stepMinutes = Math.max(1, Math.floor((365 * 24 * 60) / n));
  await sql`
    insert into jobs
    select (jsonb_populate_record(null::jobs, to_jsonb(j) || jsonb_build_object('id', j.id || '_' || g,
      'created_at', timestamptz '2026-01-01' + g * ${stepMinutes} * interval '1 minute'))).*
    from jobs j, generate_series(1, ${n}::int) g where j.id = ${template.id}`.execute(db);
  await sql`
    insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason, created_at)
    select workspace_id, id, 1, -1, 'charge', created_at from jobs where workspace_id = ${t.workspaceId} and id <> ${template.id}`.execute(db);
  await sql`analyze jobs`.execute(db);
  await sql`analyze credit_ledger`.execute(db);
}
