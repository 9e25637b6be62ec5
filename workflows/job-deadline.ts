// The customer's deadline inside a generation run (GenerationInput.cancelAt, from a create's
// `deadline_seconds`; not the model's own deadline, GenerationInput.deadlineSeconds):
// - a job not yet submitted to its provider then is never submitted: the submit step may not start
//   after it (its ScheduleToStart timeout is the time left: a task that timed out there never reached
//   a worker, and that timeout is never retried — @temporalio/common ActivityOptions
//   `scheduleToStartTimeout`), and the step itself refuses to submit past it (a task dispatched at
//   the last moment);
// - a job still working then has its steps canceled by a durable timer, and the pipeline's clean-up
//   fails it (refunded as its customer's cancel would be) and cancels its provider request.
// A job that finishes first cancels the timer: nothing is left to fail it later.
// Deterministic code only: time comes from the workflow clock.
import { ActivityFailure, ApplicationFailure, CancellationScope, isCancellation, sleep, TimeoutFailure } from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/workflow';
import { failureTypes } from '../shared/failure-types.js';

interface CustomerDeadline {
  /** The deadline, as the job row has it (ISO). */
  readonly at: string;
  /** Whether it had passed when the run started: the job is failed before any step. */
  readonly passedAtStart: boolean;
  /** Runs the job's work in a scope the deadline cancels. */
  guard<T>(work: () => Promise<T>): Promise<T>;
  /** The submit step's bound: it may not start after the deadline. */
  submitBound(): Pick<ActivityOptions, 'scheduleToStartTimeout'>;
  /** Whether `err` ended the job because of the deadline (its timer, or a submit it kept from starting). */
  endedBy(err: unknown): boolean;
  /** Whether `err` says the deadline kept the job from a submit (no attempt started, or the step refused). */
  keptOff(err: unknown): boolean;
  /** The job finished first: its timer is canceled. */
  clear(): void;
}

/** Whether a failure says the deadline kept the job from a submit (the run's or the step's refusal, or the step's ScheduleToStart timeout). */
function submitKeptOff(err: unknown): boolean {
  if (err instanceof ApplicationFailure) return err.type === failureTypes.jobDeadlinePassed;
  if (!(err instanceof ActivityFailure)) return false;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure) return cause.type === failureTypes.jobDeadlinePassed;
  return cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_START';
}

/** The run's customer deadline; undefined when the job has none (a run then behaves as it always did: no timer, no scope). */
export function customerDeadline(cancelAt: string | undefined): CustomerDeadline | undefined {
  if (cancelAt === undefined) return undefined;
  const atMs = Date.parse(cancelAt);
  const passedAtStart = atMs <= Date.now();
  let fired = passedAtStart;
  const work = new CancellationScope();
  const timer = new CancellationScope();
  if (!passedAtStart) {
    void timer
      .run(() => sleep(atMs - Date.now()))
      .then(
        () => {
          fired = true;
          work.cancel();
        },
        // Canceled: the job finished first, or the workflow itself was canceled.
        () => undefined,
      );
  }
  return {
    at: cancelAt,
    passedAtStart,
    guard: (fn) => work.run(fn),
    // At least a millisecond: a zero timeout would mean none.
    submitBound: () => ({ scheduleToStartTimeout: Math.max(atMs - Date.now(), 1) }),
    endedBy: (err) => (fired && isCancellation(err)) || submitKeptOff(err),
    keptOff: submitKeptOff,
    clear: () => timer.cancel(),
  };
}
