// The reconciler's claims on jobs: rows leased for a while (reconcile_lease_until) with FOR UPDATE
// SKIP LOCKED, so replicas share the work and never act on the same job. Which statuses are in
// flight comes from the caller (jobs/transitions.ts inFlightStatuses): this file holds SQL only.
import { sql, type SelectQueryBuilder } from 'kysely';
import type { Queryable } from '../index.js';
import type { DB, Job, JobStatus } from '../schema.js';

/** Marks the jobs' workflows as started (they exist at Temporal): the reconciler stops asking. */
export async function markWorkflowsStarted(db: Queryable, jobIds: string[]): Promise<void> {
  if (jobIds.length === 0) return;
  await db.updateTable('jobs').set({ workflow_started: true }).where('id', 'in', jobIds).execute();
}

/**
 * How long a reconciler replica's claim on a job (or a webhook delivery to dispatch) keeps the others
 * off it: far longer than one pass's work on a batch, so a claim never runs out mid-pass, and short
 * enough that the claims of a replica that died mid-pass are free again within a minute.
 */
export const RECONCILE_CLAIM_MS = 60_000;

const leaseFree = sql<boolean>`(reconcile_lease_until is null or reconcile_lease_until < now())`;
const leaseFor = (leaseMs: number) => sql<Date>`now() + make_interval(secs => ${leaseMs / 1000})`;

/**
 * Leases for `leaseMs` the rows of `candidates` that no other replica holds: rows locked by another
 * claim are skipped (SKIP LOCKED), then rows whose lease has not run out, so replicas share the work
 * and never act on the same job.
 */
function leaseJobs(db: Queryable, candidates: SelectQueryBuilder<DB, 'jobs', { id: string }>, leaseMs: number): Promise<Job[]> {
  return db
    .updateTable('jobs')
    .set({ reconcile_lease_until: leaseFor(leaseMs) })
    .where('id', 'in', candidates.where(leaseFree).forUpdate().skipLocked())
    .where(leaseFree)
    .returningAll()
    .execute();
}

/**
 * Claims for `leaseMs` up to `limit` pending jobs whose workflow has not marked them started within
 * `olderThanMs` (a start that failed after commit, or a workflow still waiting in a backlog), oldest
 * first, that no other replica holds. Served by jobs_unstarted_idx.
 */
export async function claimUnstartedJobs(db: Queryable, olderThanMs: number, limit: number, leaseMs: number): Promise<Job[]> {
  const candidates = db
    .selectFrom('jobs')
    .select('id')
    .where('workflow_started', '=', false)
    .where('status', '=', 'pending')
    .where('created_at', '<', sql<Date>`now() - make_interval(secs => ${olderThanMs / 1000})`)
    .orderBy('created_at')
    .limit(limit);
  return leaseJobs(db, candidates, leaseMs);
}

/**
 * Claims for `leaseMs` up to `limit` jobs in flight whose row has not been written for `staleAfterMs`
 * (a final write lost with a database crash, or a long generation), oldest first, that no replica
 * holds and none checked within `staleAfterMs` (a checked row's lease ends when its check does, so
 * it comes back only that much later). Pending jobs whose workflow was never marked started are
 * the unstarted pass's. Served by jobs_stale_in_flight_idx.
 */
export async function claimStaleInFlightJobs(
  db: Queryable,
  inFlight: readonly JobStatus[],
  staleAfterMs: number,
  limit: number,
  leaseMs: number,
): Promise<Job[]> {
  const bound = sql<Date>`now() - make_interval(secs => ${staleAfterMs / 1000})`;
  const candidates = db
    .selectFrom('jobs')
    .select('id')
    .where('status', 'in', inFlight)
    .where('updated_at', '<', bound)
    .where((eb) => eb.or([eb('status', '=', 'generating'), eb('workflow_started', '=', true)]))
    .where((eb) => eb.or([eb('reconcile_lease_until', 'is', null), eb('reconcile_lease_until', '<', bound)]))
    .orderBy('updated_at')
    .limit(limit);
  return leaseJobs(db, candidates, leaseMs);
}

/** Ends this replica's leases on the jobs now (checked and left as they are): other passes may act on them at once. */
export async function releaseLeases(db: Queryable, jobIds: string[]): Promise<void> {
  if (jobIds.length === 0) return;
  await db
    .updateTable('jobs')
    .set({ reconcile_lease_until: sql<Date>`now()` })
    .where('id', 'in', jobIds)
    .execute();
}

/**
 * Claims for `leaseMs` those of `jobIds` still in flight (`inFlight`: jobs/transitions.ts) that no other
 * replica holds: the jobs whose closed workflow run this replica will settle. Primary-key reads only.
 */
export async function claimInFlightJobs(db: Queryable, inFlight: readonly JobStatus[], jobIds: string[], leaseMs: number): Promise<Job[]> {
  if (jobIds.length === 0) return [];
  const candidates = db.selectFrom('jobs').select('id').where('id', 'in', jobIds).where('status', 'in', inFlight);
  return leaseJobs(db, candidates, leaseMs);
}

/** Those of `jobIds` still in flight, with the run that holds each (primary-key reads). */
export async function inFlightJobs(db: Queryable, inFlight: readonly JobStatus[], jobIds: string[]): Promise<Pick<Job, 'id' | 'status' | 'status_run_id'>[]> {
  if (jobIds.length === 0) return [];
  return db.selectFrom('jobs').select(['id', 'status', 'status_run_id']).where('id', 'in', jobIds).where('status', 'in', inFlight).execute();
}

/**
 * When the oldest job still in flight was created (null: none is). A replica asks once, at its first pass.
 */
export async function oldestInFlightCreatedAt(db: Queryable, inFlight: readonly JobStatus[]): Promise<Date | null> {
  const r = await db.selectFrom('jobs').select('created_at').where('status', 'in', inFlight).orderBy('created_at').limit(1).executeTakeFirst();
  return r?.created_at ?? null;
}
