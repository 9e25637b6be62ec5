// A task run one call at a time: each call waits for the run before it (whether that succeeded or
// failed), then runs the task itself and answers with its own run's result. For control loops that
// several triggers may ask for at once (a notification, a periodic sweep, a caller), where two runs
// side by side would each read the same state and together overstep what one run keeps to.

/** `task`, called at most once at a time; calls made meanwhile queue in order. */
export function oneAtATime<T>(task: () => Promise<T>): () => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return () => {
    const run = tail.then(task, task);
    tail = run.catch(() => undefined);
    return run;
  };
}
