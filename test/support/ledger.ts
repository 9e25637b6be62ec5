// The credit ledger rows of one job, oldest first: what tests assert a job's charges by. A test
// helper, not a repository function: the service never reads a job's ledger row by row.
import type { Queryable } from '../../db/index.js';

export async function ledgerForJob(db: Queryable, jobId: string) {
  return db.selectFrom('credit_ledger').selectAll().where('job_id', '=', jobId).orderBy('job_seq').execute();
}

/** The job's ledger summed as a record's `charges` says: debits, credits and their difference. */
export async function ledgerCharges(db: Queryable, jobId: string): Promise<{ charged: number; refunded: number; net: number }> {
  const rows = await ledgerForJob(db, jobId);
  const charged = rows.reduce((s, l) => s + Math.max(-Number(l.delta), 0), 0);
  const refunded = rows.reduce((s, l) => s + Math.max(Number(l.delta), 0), 0);
  return { charged, refunded, net: charged - refunded };
}
