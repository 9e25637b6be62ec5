// Control-loop leases: a loop that must run once per deployment (the reconcilers, webhook outbox
// dispatch, upload sweeps, route probes, the fleet-wide gauges, build promotion) runs only in the
// worker process holding its lease, however many replicas have the role.
//
// A lease is a row of `control_leases` (0045_control_leases), not a Postgres advisory lock: an
// advisory lock lives as long as its session, so a holder whose event loop stalls, or whose
// connection hangs half-open, keeps the lock while doing nothing, and a session lock does not
// survive a transaction-mode pooler (PgBouncer). A row with an expiry measured by the database's
// clock is given up by a holder that stops renewing, whatever the connection does, and its epoch
// fences the holder's writes:
// - Each process (its `holder` id is unique per process start) runs one tick every TTL/3: a single
//   upsert takes every loop whose row is free or expired and renews every loop it holds. `epoch`
//   grows by one whenever the row changes holder (or its holder lets it expire), so it is the
//   fencing token of one tenure.
// - The holder stops a loop (its signal aborts) when a renewal does not return the row, or when no
//   renewal succeeded within the TTL by its own clock (a stalled process, a database it cannot
//   reach): by then the row may have expired and been taken.
// - A write that must come from the holder checks the lease in its own transaction
//   (assertLeaseHeld: the row FOR SHARE, same holder and epoch, not expired); a take-over waits for
//   that transaction, so a fenced write never commits after another process took over.
// - Only an eligible process takes or keeps a lease: with Worker Versioning, a process of the
//   current build (control-fleet.ts). A build that stops being current releases its leases at its
//   next check; the others take them at their next tick.
// Take-over bounds: a holder that stops cleanly (SIGTERM, drain) releases its rows at once, and
// another process holds them within TTL/3. A holder killed or stalled keeps its rows until they
// expire: another process holds them within TTL + TTL/3 of the holder's last renewal.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { sql, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/index.js';
import type { DB } from '../db/schema.js';

/** One tenure of one loop's lease by this process. */
export interface Lease {
  readonly deployment: string;
  readonly loop: string;
  readonly holder: string;
  /** The fencing token: grows at every change of holder. */
  readonly epoch: number;
  /** Aborts when this tenure ends (lost, released, given up, or the process stops). */
  readonly signal: AbortSignal;
  /** Whether this process may still act as the holder: renewed within the TTL by its own clock. */
  valid(): boolean;
}

/** A loop run under a lease: started at each tenure, stopped when it ends. */
export interface LeasedLoop {
  start(lease: Lease): void;
  stop(): Promise<void>;
}

export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

interface ControlLeaseOptions {
  db: Database;
  /** Which deployment the loops serve: one holder per loop per deployment. */
  deployment: string;
  /** This process's build (recorded on the row for operators); null when unversioned. */
  buildId: string | null;
  ttlMs: number;
  logger: Logger;
  /**
   * Whether this process may hold leases now (the current build); asked before taking a free lease
   * and at every tick while holding one, so it caches its own answer. Unset: always.
   */
  eligible?: () => Promise<boolean>;
  /** Told at every start and end of a tenure (metrics). */
  onChange?: (loop: string, held: boolean, epoch: number) => void;
  /** This process's holder id (tests); default: host, pid and a random suffix. */
  holder?: string;
}

export interface ControlLeases {
  readonly holder: string;
  /** Runs `loop` while this process holds the lease named `name`; before start(). */
  register(name: string, loop: LeasedLoop): void;
  /** Starts competing for the registered leases (the first tick runs at once). */
  start(): void;
  /** Runs one tick now (tests): takes, renews or gives up leases. */
  tick(): Promise<void>;
  /** The current tenure of `name`, or null. */
  held(name: string): Lease | null;
  /** Stops the loops it runs, then releases their rows so another process takes them at its next tick. */
  stop(): Promise<void>;
}

/** The deployment key of a process: its namespace, task queue prefix and Worker Deployment name. */
export function leaseDeployment(config: { TEMPORAL_NAMESPACE: string; TASK_QUEUE_PREFIX: string; WORKER_DEPLOYMENT_NAME?: string | undefined }): string {
  return [config.TEMPORAL_NAMESPACE, config.TASK_QUEUE_PREFIX, config.WORKER_DEPLOYMENT_NAME ?? ''].join('/');
}

/** How often a process ticks: renewals and take-over attempts. */
const tickMs = (ttlMs: number) => Math.max(50, Math.floor(ttlMs / 3));

/**
 * Fails with LeaseLostError unless `lease` is still this tenure's (same holder and epoch, not
 * expired); run inside the transaction of the write it fences, which it makes wait for (and be
 * waited for by) a take-over.
 */
export async function assertLeaseHeld(trx: Kysely<DB>, lease: Pick<Lease, 'deployment' | 'loop' | 'holder' | 'epoch'>): Promise<void> {
  const r = await sql`
    select 1 from control_leases
    where deployment = ${lease.deployment} and loop = ${lease.loop} and holder = ${lease.holder}
      and epoch = ${lease.epoch} and expires_at > now()
    for share`.execute(trx);
  if (r.rows.length === 0) throw new LeaseLostError(`the ${lease.loop} lease (epoch ${lease.epoch}) is no longer held by this process`);
}

/** Who holds each loop's lease of `deployment` now (expired rows left out). */
export async function leaseHolders(db: Database, deployment: string): Promise<Map<string, { holder: string; epoch: number; buildId: string | null }>> {
  const r = await sql<{ loop: string; holder: string; epoch: string; build_id: string | null }>`
    select loop, holder, epoch, build_id from control_leases where deployment = ${deployment} and expires_at > now()`.execute(db);
  return new Map(r.rows.map((x) => [x.loop, { holder: x.holder, epoch: Number(x.epoch), buildId: x.build_id }]));
}

interface Tenure {
  lease: Lease;
  abort: AbortController;
  /** performance.now() until which this process may act: the start of its last successful renewal plus the TTL. */
  validUntil: number;
}

export function createControlLeases(opts: ControlLeaseOptions): ControlLeases {
  const { db, deployment, ttlMs, logger } = opts;
  const holder = opts.holder ?? `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
  const loops = new Map<string, LeasedLoop>();
  const tenures = new Map<string, Tenure>();
  let timer: NodeJS.Timeout | null = null;
  let ticking: Promise<void> | null = null;
  let stopped = false;
  let eligibleLast = true;

  function begin(loop: string, epoch: number, startedAt: number): void {
    const abort = new AbortController();
    const tenure: Tenure = {
      abort,
      validUntil: startedAt + ttlMs,
      lease: { deployment, loop, holder, epoch, signal: abort.signal, valid: () => !abort.signal.aborted && performance.now() < tenure.validUntil },
    };
    tenures.set(loop, tenure);
    logger.info({ loop, epoch, holder }, 'control lease taken: this process runs the loop');
    opts.onChange?.(loop, true, epoch);
    loops.get(loop)!.start(tenure.lease);
  }

  async function end(loop: string, why: string): Promise<void> {
    const t = tenures.get(loop);
    if (!t) return;
    tenures.delete(loop);
    t.abort.abort();
    logger.info({ loop, epoch: t.lease.epoch, holder, why }, 'control lease ended: this process stops the loop');
    opts.onChange?.(loop, false, t.lease.epoch);
    await loops
      .get(loop)!
      .stop()
      .catch((err: unknown) => logger.warn({ loop, err: (err as Error).message }, 'a control loop failed to stop'));
  }

  /** Expires this process's rows of `names` (still at the epochs it holds) so others take them at once. */
  async function release(held: Lease[]): Promise<void> {
    for (const l of held) {
      await sql`update control_leases set expires_at = now() where deployment = ${deployment} and loop = ${l.loop} and holder = ${holder} and epoch = ${l.epoch}`
        .execute(db)
        .catch((err: unknown) => logger.warn({ loop: l.loop, err: (err as Error).message }, 'could not release a control lease; it expires by itself'));
    }
  }

  async function isEligible(): Promise<boolean> {
    if (!opts.eligible) return true;
    try {
      eligibleLast = await opts.eligible();
    } catch (err) {
      // Unknown: keep the last answer (a database or Temporal hiccup must not hand every loop around).
      logger.warn({ err: (err as Error).message }, 'could not tell whether this build may run the control loops; keeping the last answer');
    }
    return eligibleLast;
  }

  async function runTick(): Promise<void> {
    const startedAt = performance.now();
    const names = [...loops.keys()].sort();
    if (names.length === 0) return;
    for (const [loop, t] of tenures) if (startedAt >= t.validUntil) await end(loop, `not renewed within ${ttlMs} ms`);
    if (tenures.size === 0) {
      // Not holding anything: one read, and nothing more while every lease is held elsewhere.
      const live = await leaseHolders(db, deployment);
      if (names.every((n) => live.has(n))) return;
    }
    if (!(await isEligible())) {
      if (tenures.size > 0) {
        const held = [...tenures.values()].map((t) => t.lease);
        for (const l of held) await end(l.loop, 'this build may not run control loops (not the current build)');
        await release(held);
      }
      return;
    }
    const ttl = `${ttlMs} milliseconds`;
    // One statement per tick: takes every free or expired row, renews this process's own. Rows are
    // locked in name order by every process, so concurrent ticks never deadlock.
    const r = await sql<{ loop: string; epoch: string }>`
      insert into control_leases as l (deployment, loop, holder, build_id, epoch, acquired_at, expires_at)
      select ${deployment}, n, ${holder}, ${opts.buildId}, 1, now(), now() + ${ttl}::interval
      from unnest(${names}::text[]) as n
      on conflict (deployment, loop) do update
        set holder = excluded.holder,
            build_id = excluded.build_id,
            epoch = case when l.holder = excluded.holder and l.expires_at > now() then l.epoch else l.epoch + 1 end,
            acquired_at = case when l.holder = excluded.holder and l.expires_at > now() then l.acquired_at else now() end,
            expires_at = excluded.expires_at
        where l.holder = excluded.holder or l.expires_at <= now()
      returning loop, epoch`.execute(db);
    if (stopped) {
      await release(r.rows.map((x) => ({ loop: x.loop, epoch: Number(x.epoch) }) as Lease));
      return;
    }
    const got = new Map(r.rows.map((x) => [x.loop, Number(x.epoch)]));
    for (const [loop, t] of [...tenures]) {
      const epoch = got.get(loop);
      if (epoch === t.lease.epoch) t.validUntil = startedAt + ttlMs;
      else await end(loop, epoch === undefined ? 'another process holds it' : 'it expired before this renewal');
    }
    for (const [loop, epoch] of got) if (!tenures.has(loop)) begin(loop, epoch, startedAt);
  }

  function tick(): Promise<void> {
    ticking ??= runTick()
      .catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'control lease tick failed; the next one tries again'))
      .finally(() => {
        ticking = null;
      });
    return ticking;
  }

  function schedule(delay: number): void {
    timer = setTimeout(() => {
      void tick().finally(() => {
        if (!stopped) schedule(tickMs(ttlMs));
      });
    }, delay);
    timer.unref();
  }

  return {
    holder,
    register(name, loop) {
      if (loops.has(name)) throw new Error(`control loop ${name} is registered twice`);
      loops.set(name, loop);
    },
    start() {
      if (!timer && !stopped) schedule(0);
    },
    tick,
    held: (name) => tenures.get(name)?.lease ?? null,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await ticking;
      const held = [...tenures.values()].map((t) => t.lease);
      for (const l of held) await end(l.loop, 'this process stops');
      await release(held);
    },
  };
}
