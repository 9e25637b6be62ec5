// Deterministic races: hold the next run of a chosen activity (before it runs, or after it has run
// but before it reports back to Temporal) until the test releases it, through a real Temporal
// activity interceptor on the workers. No timing: the test waits until the hold is reached.
import type { ActivityInterceptorsFactory } from '@temporalio/worker';

export type HoldPoint = 'before' | 'after';

export interface HeldCall {
  /** Resolves with the job (workflow) id when the held call has arrived at the hold. */
  reached: Promise<string>;
  release(): void;
  /** Settles when the held call has finished: its result, or its error as a value. */
  finished: Promise<{ ok: true; value: unknown } | { ok: false; error: Error }>;
}

interface Hold {
  what: string;
  point: HoldPoint;
  jobId?: string;
  reach(jobId: string): void;
  released: Promise<void>;
  finish(r: { ok: true; value: unknown } | { ok: false; error: Error }): void;
}

export class Holds {
  private holds: Hold[] = [];

  /** Hold the next run of `activityType` (for `jobId`, or any job) at `point`. */
  activity(activityType: string, point: HoldPoint = 'before', jobId?: string): HeldCall {
    return this.add(activityType, point, jobId);
  }

  private add(what: string, point: HoldPoint, jobId?: string): HeldCall {
    let reach!: (id: string) => void;
    let release!: () => void;
    let finish!: Hold['finish'];
    const reached = new Promise<string>((r) => (reach = r));
    const released = new Promise<void>((r) => (release = r));
    const finished = new Promise<Parameters<Hold['finish']>[0]>((r) => (finish = r));
    this.holds.push({ what, point, jobId, reach, released, finish });
    return { reached, release, finished };
  }

  private take(what: string, point: HoldPoint, jobId: string): Hold | undefined {
    const i = this.holds.findIndex((h) => h.what === what && h.point === point && (h.jobId === undefined || h.jobId === jobId));
    return i < 0 ? undefined : this.holds.splice(i, 1)[0];
  }

  private async around<T>(what: string, jobId: string, run: () => Promise<T>, heartbeat: () => void): Promise<T> {
    const before = this.take(what, 'before', jobId);
    if (before) {
      before.reach(jobId);
      await heldAlive(before.released, heartbeat);
    }
    const after = this.take(what, 'after', jobId);
    try {
      const value = await run();
      if (after) {
        after.reach(jobId);
        await heldAlive(after.released, heartbeat);
      }
      before?.finish({ ok: true, value });
      after?.finish({ ok: true, value });
      return value;
    } catch (err) {
      before?.finish({ ok: false, error: err as Error });
      after?.finish({ ok: false, error: err as Error });
      throw err;
    }
  }

  /** For FleetDeps.activityInterceptors. */
  readonly activityInterceptor: ActivityInterceptorsFactory = (ctx) => ({
    inbound: {
      execute: (input, next) =>
        this.around(
          ctx.info.activityType,
          ctx.info.workflowExecution?.workflowId ?? '',
          () => next(input),
          () => ctx.heartbeat(ctx.info.heartbeatDetails),
        ),
    },
  });
}

/**
 * Waits for the release while heartbeating (with the details the attempt started with, so a resuming
 * activity still finds them): a held activity is alive, and a busy machine that makes a test wait
 * longer than the activity's heartbeat timeout must not turn the hold into a retry.
 */
async function heldAlive(released: Promise<void>, heartbeat: () => void): Promise<void> {
  const timer = setInterval(heartbeat, 5_000);
  try {
    await released;
  } finally {
    clearInterval(timer);
  }
}
