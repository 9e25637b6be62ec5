// Part of the reconciler role: marks completed uploads past their expiry `expired` and removes the
// objects of expired and deleted uploads no job in flight reads (db/upload-lifecycle.ts); removes
// pending direct uploads that were never completed within PENDING_UPLOAD_TTL_SECONDS (their
// incoming object, then the row), and every incoming object
// without a pending row: a presigned POST stays usable until it expires, so a client can send
// bytes again after its upload was completed, refused or swept, and nothing else would ever
// remove them. Idempotent, so several replicas may run it; a pass runs every RECONCILE_INTERVAL_MS.
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import { withLongStatements, type Database } from '../db/index.js';
import type { Storage } from '../shared/storage.js';
import { deletePendingUpload, findExpiredPendingUploads, uploadStatuses } from '../db/repos/uploads.js';
import { INCOMING } from '../shared/uploads.js';
import { periodic } from './periodic.js';
import { sweepUploadLifetimes } from '../db/upload-lifecycle.js';
import { redactText } from '../shared/redact.js';
import { sweepIdempotencyKeys } from '../db/repos/idempotency.js';
import { sweepFailedUploads } from '../db/repos/uploads.js';
import { sweepIdleRateLimits } from '../db/repos/rate-limits.js';
import { sweepAuditEvents } from '../db/repos/audit.js';
import { sweepWorkspaceEvents } from '../db/repos/workspace-events.js';
import { sweepConsoleSessions } from '../db/repos/console-sessions.js';

/** Refused (failed) upload records are removed this many days after they failed (their bytes went at once): long enough to answer a client asking why. */
const FAILED_UPLOAD_KEEP_DAYS = 7;

/** A rate-limit row without a lease for this long holds nothing; the next request writes it again. */
const RATE_LIMIT_ROW_IDLE_MS = 3_600_000;

export interface UploadSweeper {
  start(): void;
  stop(): Promise<void>;
  /** One pass; returns how many pending uploads it removed. */
  runOnce(now?: Date): Promise<number>;
}

export function createUploadSweeper(deps: { config: Config; db: Database; storage: Storage; logger: Logger }): UploadSweeper {
  async function runOnce(now = new Date()): Promise<number> {
    const removed = await sweepExpiredUploads(deps, now);
    const lifetimes = await sweepUploadLifetimes(deps, now);
    if (lifetimes.expired > 0 || lifetimes.removed > 0) deps.logger.info(lifetimes, 'expired uploads, and removed the files of expired or deleted ones');
    const orphans = await sweepOrphanIncoming(deps, { now, unknownGraceMs: deps.config.DIRECT_UPLOAD_EXPIRY_SECONDS * 1000 });
    if (orphans > 0) deps.logger.info({ removed: orphans }, 'removed incoming objects without a pending upload');
    // The other tables that grow with traffic are trimmed in the same pass, a bounded batch each:
    // idempotency keys past their 24 h replay window, refused uploads after
    // FAILED_UPLOAD_KEEP_DAYS (7), rate-limit rows idle for RATE_LIMIT_ROW_IDLE_MS, audit
    // events older than AUDIT_RETENTION_DAYS, workspace events older than EVENTS_RETENTION_DAYS and
    // console sessions past their expiry. A batch over a large table may outlast the pool's
    // statement timeout: each runs under DATABASE_LONG_STATEMENT_TIMEOUT_MS.
    const long = { statementMs: deps.config.DATABASE_LONG_STATEMENT_TIMEOUT_MS };
    await withLongStatements(deps.db, long, (tx) => sweepIdempotencyKeys(tx));
    await withLongStatements(deps.db, long, (tx) => sweepFailedUploads(tx, new Date(now.getTime() - FAILED_UPLOAD_KEEP_DAYS * 86_400_000)));
    await withLongStatements(deps.db, long, (tx) => sweepIdleRateLimits(tx, Math.max(RATE_LIMIT_ROW_IDLE_MS, deps.config.RATE_LIMIT_WINDOW_MS)));
    const auditRemoved = await withLongStatements(deps.db, long, (tx) => sweepAuditEvents(tx, deps.config.AUDIT_RETENTION_DAYS));
    if (auditRemoved > 0) deps.logger.info({ removed: auditRemoved }, 'removed audit events past their retention');
    const eventsRemoved = await withLongStatements(deps.db, long, (tx) => sweepWorkspaceEvents(tx, deps.config.EVENTS_RETENTION_DAYS));
    if (eventsRemoved > 0) deps.logger.info({ removed: eventsRemoved }, 'removed workspace events past their retention');
    const sessionsRemoved = await withLongStatements(deps.db, long, (tx) => sweepConsoleSessions(tx, now));
    if (sessionsRemoved > 0) deps.logger.info({ removed: sessionsRemoved }, 'removed expired console sessions');
    if (removed > 0) deps.logger.info({ removed }, 'removed expired pending uploads');
    return removed;
  }

  const loop = periodic(
    deps.config.RECONCILE_INTERVAL_MS,
    () => runOnce(),
    (err) => deps.logger.warn({ err: redactText(err.message) }, 'upload sweep failed'),
  );
  return { start: loop.start, stop: loop.stop, runOnce };
}

/**
 * Removes pending direct uploads whose expiry has passed: the incoming object first, then the row
 * (only while still pending). Returns how many were removed.
 */
async function sweepExpiredUploads(deps: { db: Database; storage: Storage }, now = new Date(), batch = 500): Promise<number> {
  let removed = 0;
  for (const row of await findExpiredPendingUploads(deps.db, now, batch)) {
    if (row.object_key.startsWith(INCOMING)) await deps.storage.remove(row.object_key);
    if (await deletePendingUpload(deps.db, row.id)) removed++;
  }
  return removed;
}

/** The upload id in an incoming key (`incoming/<workspace>/<upload id>/<token>.<ext>`), or null. */
function uploadIdOfIncomingKey(key: string): string | null {
  const parts = key.slice(INCOMING.length).split('/');
  return key.startsWith(INCOMING) && parts.length === 3 && parts[1] ? parts[1] : null;
}

/**
 * Removes every object under incoming/ whose upload is not pending: completed, refused or swept
 * at once, and one without an upload row once it is older than a presigned POST lives
 * (`unknownGraceMs`, DIRECT_UPLOAD_EXPIRY_SECONDS). A row is committed before its POST is handed
 * out, so an object without one is either left from a row swept since, or from a row this
 * database never had: one lost in a failover to a replica that had not received it, or another
 * deployment's sharing the bucket (every test suite has a database of its own and shares the
 * stack's bucket). Those keep their bytes while their POST may still land and be completed. A
 * pending upload's object stays: its completion will inspect it. Returns how many were removed.
 */
async function sweepOrphanIncoming(deps: { db: Database; storage: Storage }, opts: { now?: Date; unknownGraceMs: number; batch?: number }): Promise<number> {
  const batch = opts.batch ?? 500;
  const unknownBefore = (opts.now ?? new Date()).getTime() - opts.unknownGraceMs;
  let removed = 0;
  let objects: { key: string; lastModified: Date }[] = [];
  const flush = async () => {
    const ids = objects.map((o) => uploadIdOfIncomingKey(o.key));
    const statuses = await uploadStatuses(deps.db, [...new Set(ids.filter((id): id is string => id !== null))]);
    for (const [i, o] of objects.entries()) {
      const status = ids[i] ? statuses.get(ids[i]) : undefined;
      if (status === 'pending') continue;
      if (status === undefined && o.lastModified.getTime() > unknownBefore) continue;
      await deps.storage.remove(o.key);
      removed++;
    }
    objects = [];
  };
  for await (const o of deps.storage.list(INCOMING)) {
    objects.push(o);
    if (objects.length >= batch) await flush();
  }
  await flush();
  return removed;
}
