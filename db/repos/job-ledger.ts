// A job's credits: the workspace's balance and the job's rows of the credit ledger. The service
// decides what a job's net charge should be (jobs/rules.ts settledCharge); this writes the
// difference, so retries, worker crashes and operator resets charge exactly once.
import { sql } from 'kysely';
import type { Queryable, Tx } from '../index.js';
import type { Job, LedgerReason } from '../schema.js';
import { jobSpendAdjustment } from './budgets.js';

export class InsufficientCreditsError extends Error {
  override name = 'InsufficientCreditsError';
  constructor(
    readonly required: number,
    readonly available: number,
  ) {
    super(`insufficient credits: ${required} required, ${available} available`);
  }
}

/** Debits `amount` if the balance allows it; never goes below zero. Returns the new balance. */
async function debitCredits(tx: Queryable, workspaceId: string, amount: number): Promise<number> {
  const row = await tx
    .updateTable('workspaces')
    .set({ credits: sql`credits - ${amount}`, updated_at: sql`now()` })
    .where('id', '=', workspaceId)
    .where('credits', '>=', amount)
    .returning('credits')
    .executeTakeFirst();
  if (row) return row.credits;
  const ws = await tx.selectFrom('workspaces').select('credits').where('id', '=', workspaceId).executeTakeFirst();
  throw new InsufficientCreditsError(amount, ws?.credits ?? 0);
}

/** The workspace's credit balance (undefined: no such workspace). */
export async function creditsOf(q: Queryable, workspaceId: string): Promise<number | undefined> {
  return (await q.selectFrom('workspaces').select('credits').where('id', '=', workspaceId).executeTakeFirst())?.credits;
}

/** The job's net charge so far (positive = credits taken from the workspace). */
async function netCharge(tx: Tx, jobId: string): Promise<{ net: number; lastSeq: number }> {
  const r = await tx
    .selectFrom('credit_ledger')
    .select([sql<number>`coalesce(-sum(delta), 0)::int`.as('net'), sql<number>`coalesce(max(job_seq), 0)::int`.as('last_seq')])
    .where('job_id', '=', jobId)
    .executeTakeFirstOrThrow();
  return { net: r.net, lastSeq: r.last_seq };
}

/**
 * Make the job's net charge equal `target`, writing one ledger row for the difference (or none),
 * with the job's `credits_charged` / `credits_refunded` and its timeline entry (`cause`: why, e.g.
 * the error code of a failure; `details`: more for the entry) in the same statement.
 * The caller holds the job row lock, which serializes concurrent settlements; (job_id, job_seq)
 * uniqueness backs it up. Returns the credits moved: positive = charged now, negative = refunded now.
 * The budget counters the job's charge went to move with it (its creation's period), in this transaction.
 */
export async function settleChargeTo(tx: Tx, job: Job, target: number, cause?: string, details: Record<string, unknown> = {}): Promise<number> {
  const { net, lastSeq } = await netCharge(tx, job.id);
  const diff = target - net;
  if (diff === 0) return 0;
  let reason: LedgerReason;
  if (diff > 0) {
    await debitCredits(tx, job.workspace_id, diff);
    reason = 'recharge';
  } else {
    await tx
      .updateTable('workspaces')
      .set({ credits: sql`credits + ${-diff}`, updated_at: sql`now()` })
      .where('id', '=', job.workspace_id)
      .execute();
    reason = 'refund';
  }
  const seq = lastSeq + 1;
  const entry = JSON.stringify({ amount: Math.abs(diff), ...(cause ? { cause } : {}), ...details });
  await sql`
    with ledger as (
      insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason, note) values (${job.workspace_id}, ${job.id}, ${seq}, ${-diff}, ${reason}, null)
    ), sums as (
      update jobs set credits_charged = credits_charged + ${Math.max(diff, 0)}, credits_refunded = credits_refunded + ${Math.max(-diff, 0)} where id = ${job.id}
    ), spend as (
      ${jobSpendAdjustment(job.id, diff)}
    )
    insert into job_timeline (job_id, key, type, details)
    values (${job.id}, ${`ledger:${seq}`}, ${reason === 'refund' ? 'refunded' : 'recharged'}, ${entry}::jsonb)
    on conflict do nothing`.execute(tx);
  return diff;
}
