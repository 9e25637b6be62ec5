// Deleting a finished job's outputs on request: the row stays (status, price, ledger), its output
// keys go and `outputs_removed_at` records when. Only finished jobs: a job in flight still writes
// its outputs.
import { sql } from 'kysely';
import type { Database, Queryable } from '../index.js';
import type { Job, JobStatus } from '../schema.js';
import { recordAuditEvent } from './audit.js';
import type { AuditActor } from '../../shared/audit.js';

/**
 * Marks a finished job's outputs removed (the first time only); undefined when the job is still in
 * flight. `finished`: the statuses a job has ended in (jobs/transitions.ts terminalStatuses).
 */
export async function markOutputsRemoved(db: Queryable, jobId: string, finished: readonly JobStatus[]): Promise<Job | undefined> {
  return db
    .updateTable('jobs')
    .set({ outputs: null, outputs_removed_at: sql`coalesce(outputs_removed_at, now())` })
    .where('id', '=', jobId)
    .where('status', 'in', finished)
    .returningAll()
    .executeTakeFirst();
}

/**
 * markOutputsRemoved for a customer's DELETE, with its audit event (`job.outputs_deleted` by
 * `actor`) in the same transaction, written only by the call that marked the outputs removed: a
 * repeated DELETE (idempotent, or finishing after a storage failure) records nothing more.
 */
export async function removeOutputsAudited(
  db: Database,
  job: Pick<Job, 'id' | 'workspace_id' | 'kind'>,
  finished: readonly JobStatus[],
  actor: AuditActor,
): Promise<Job | undefined> {
  return db.transaction().execute(async (tx) => {
    const before = await tx.selectFrom('jobs').select(['outputs', 'outputs_removed_at']).where('id', '=', job.id).forUpdate().executeTakeFirst();
    const marked = await markOutputsRemoved(tx, job.id, finished);
    if (marked && before && before.outputs_removed_at === null) {
      const outputs = Array.isArray(before.outputs) ? before.outputs.length : 0;
      await recordAuditEvent(tx, {
        workspaceId: job.workspace_id,
        action: 'job.outputs_deleted',
        actor,
        targetType: 'job',
        targetId: job.id,
        details: { kind: job.kind, outputs },
      });
    }
    return marked;
  });
}
