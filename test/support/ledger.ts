// The credit ledger rows of one job, oldest first: what tests assert a job's charges by. A test
// helper, not a repository function: the service never reads a job's ledger row by row.
import type { Queryable } from '../../db/index.js';

export async function ledgerForJob(db: Queryable, jobId: string) {
  return db.selectFrom('credit_ledger').selectAll().where('job_id', '=', jobId).orderBy('job_seq').execute();
}
