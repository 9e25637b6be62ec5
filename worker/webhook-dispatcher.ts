// The webhook dispatcher (runs with the reconciler role): turns each row of the webhook outbox
// (`webhook_deliveries`, written by the 0007_webhooks trigger in the transaction that moved the job)
// into one `webhookDelivery` workflow, with workflow id = event id and REJECT_DUPLICATE. It runs in
// the holder of the control fleet's `webhook-dispatch` lease only (worker/control-fleet.ts), and
// claims each batch of rows (FOR UPDATE SKIP LOCKED and a claim time, in a transaction fenced by
// that lease) before starting their workflows, so a row is started once however many replicas
// run; a crash between the start and dispatched_at leaves a claim that expires after
// RECONCILE_CLAIM_MS, and the REJECT_DUPLICATE start then finds the delivery running. It LISTENs on `webhook_deliveries` to start deliveries at once, and sweeps every
// RECONCILE_INTERVAL_MS for rows a lost notification left behind.
//
// A workspace has at most WEBHOOK_WORKSPACE_CONCURRENCY events in flight (dispatched, not yet
// delivered, given up or superseded); its other events wait in the outbox, in order, and are
// dispatched as those finish (each finish notifies the same channel). So a workspace whose
// receivers hang or that churns jobs holds a bounded share of the delivery fleet, and the events of
// every other workspace go out at once. Each delivery workflow starts with its job's Temporal
// priority and fair share (FAIR_SHARE), so a workspace's storm of events also waits in its own
// share of the webhook queues. The same sweep removes finished events older than
// WEBHOOK_OUTBOX_RETENTION_DAYS (their payload is a full job record), and circuits idle for a day.
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import { withLongStatements, type Database } from '../db/index.js';
import * as webhooksRepo from '../db/repos/webhooks.js';
import * as outbox from '../db/repos/webhook-outbox.js';
import { RECONCILE_CLAIM_MS } from '../db/repos/job-leases.js';
import { jobShares } from '../db/repos/fair-share.js';
import { createPgListener, type PgListener } from '../shared/pg-listener.js';
import { startWebhookDelivery } from '../workflows/webhook-client.js';
import { taskPriority, type FairShare } from '../shared/task-priority.js';
import { periodic } from './periodic.js';
import { oneAtATime } from '../shared/one-at-a-time.js';
import { assertLeaseHeld, type Lease } from './control-lease.js';

export interface WebhookDispatcher {
  /** Starts listening and sweeping; with `lease` (the control fleet's), each claim is fenced by it. */
  start(lease?: Lease): void;
  stop(): Promise<void>;
  /** Dispatches every undispatched event; returns how many workflows it started. */
  runOnce(): Promise<number>;
}

const BATCH = 100;

export function createWebhookDispatcher(deps: { config: Config; db: Database; client: Client; logger: Logger }): WebhookDispatcher {
  const { config, db, client, logger } = deps;
  const cap = config.WEBHOOK_WORKSPACE_CONCURRENCY;

  async function dispatch(row: outbox.ClaimedDelivery, share: FairShare | undefined): Promise<boolean> {
    let started = true;
    try {
      await startWebhookDelivery(
        client,
        config,
        { ...row, project_id: row.job.project_id === undefined ? null : String(row.job.project_id) },
        {
          workflowId: row.id,
          // A job no longer stored (retention) still has its workspace: the default share then.
          priority: taskPriority(share ?? { workspaceId: row.workspace_id, priority: 'normal', fairnessWeight: 1 }, { fairness: config.FAIR_SHARE }),
        },
      );
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      started = false;
    }
    await webhooksRepo.markDispatched(db, row.id);
    return started;
  }

  /** Claims a batch, in a transaction that checks the lease when one is held (a take-over waits for it). */
  function claim(): Promise<outbox.ClaimedDelivery[]> {
    const claimMs = RECONCILE_CLAIM_MS;
    const l = lease;
    if (!l) return outbox.claimUndispatchedDeliveries(db, BATCH, cap, claimMs);
    return db.transaction().execute(async (trx) => {
      await assertLeaseHeld(trx, l);
      return outbox.claimUndispatchedDeliveries(trx, BATCH, cap, claimMs);
    });
  }

  // One pass at a time, whoever asks (a notification, the sweep, a caller): each pass reads the
  // workspaces' in-flight counts after its claim, so two passes at once could each fill the same
  // workspace's free places and together exceed its cap (A at 8 of 10: two passes dispatch 2 each).
  const runOnce = oneAtATime(dispatchPass);

  async function dispatchPass(): Promise<number> {
    let started = 0;
    for (;;) {
      if (lease && !lease.valid()) return started;
      const rows = await claim();
      // The query leaves out workspaces at their cap; within the batch, count as we dispatch.
      const inFlight = await webhooksRepo.inFlightByWorkspace(db, [...new Set(rows.map((r) => r.workspace_id))]);
      const shares = await jobShares(db, [...new Set(rows.flatMap((r) => (r.job_id ? [r.job_id] : [])))]);
      let dispatched = 0;
      const left: string[] = [];
      for (const [i, row] of rows.entries()) {
        const n = inFlight.get(row.workspace_id) ?? 0;
        if (n >= cap) {
          left.push(row.id);
          continue;
        }
        try {
          if (await dispatch(row, row.job_id ? shares.get(row.job_id) : undefined)) started++;
          dispatched++;
          inFlight.set(row.workspace_id, n + 1);
        } catch (err) {
          // Left undispatched, its claim and the rest of the batch's given back: the next pass tries again.
          logger.warn({ deliveryId: row.id, err: (err as Error).message }, 'webhook dispatch failed');
          await outbox.releaseDispatchClaims(db, [...left, ...rows.slice(i).map((r) => r.id)]);
          return started;
        }
      }
      await outbox.releaseDispatchClaims(db, left);
      // A full batch may hide more; a batch whose rows all waited on their workspace's cap does not.
      if (rows.length < BATCH || dispatched === 0) return started;
    }
  }

  /** The periodic pass: whatever a lost notification left behind, then the outbox retention. */
  async function sweepPass(): Promise<void> {
    await runOnce();
    const before = new Date(Date.now() - config.WEBHOOK_OUTBOX_RETENTION_DAYS * 86_400_000);
    const removed = await withLongStatements(db, { statementMs: config.DATABASE_LONG_STATEMENT_TIMEOUT_MS }, (tx) =>
      webhooksRepo.sweepFinishedDeliveries(tx, before),
    );
    if (removed > 0) logger.info({ removed }, 'removed finished webhook events past their retention');
    // No delivery waits on a circuit untouched for a day (waiting ones move it every cooldown).
    await webhooksRepo.sweepIdleCircuits(db, new Date(Date.now() - 86_400_000));
  }

  // Notifications coalesce: one pass at a time, and one more after it if any arrived meanwhile.
  let running: Promise<unknown> | null = null;
  let again = false;
  const kick = () => {
    if (running) {
      again = true;
      return;
    }
    running = runOnce()
      .catch((err) => logger.warn({ err: (err as Error).message }, 'webhook dispatch pass failed'))
      .finally(() => {
        running = null;
        if (again) {
          again = false;
          kick();
        }
      });
  };

  let lease: Lease | null = null;
  const sweep = periodic(config.RECONCILE_INTERVAL_MS, sweepPass, (err) => logger.warn({ err: err.message }, 'webhook dispatch sweep failed'));
  let listener: PgListener | null = null;

  return {
    start(l) {
      lease = l ?? null;
      listener ??= createPgListener({
        databaseUrl: config.DATABASE_URL,
        channels: [webhooksRepo.WEBHOOK_DELIVERIES_CHANNEL],
        applicationName: 'worker-webhook-dispatcher',
        logger,
        what: 'webhook dispatcher listener',
        onNotification: kick,
        // On every (re)connect: whatever was written while nobody listened.
        onConnected: kick,
      });
      sweep.start();
    },
    async stop() {
      await sweep.stop();
      await listener?.close();
      listener = null;
      await running;
      lease = null;
    },
    runOnce,
  };
}
