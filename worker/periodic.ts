// A background pass repeated every `intervalMs` (the reconciler's passes, the pending-upload sweep):
// never two at once, a failed pass is reported and the next one still runs, and stop() waits for
// the pass in flight.
interface PeriodicTask {
  start(): void;
  stop(): Promise<void>;
}

export function periodic(intervalMs: number, pass: () => Promise<unknown>, onError: (err: Error) => void): PeriodicTask {
  let timer: NodeJS.Timeout | null = null;
  let current: Promise<unknown> | null = null;

  function schedule() {
    timer = setTimeout(() => {
      current = pass()
        .catch((err) => onError(err as Error))
        .finally(() => {
          current = null;
          if (timer) schedule();
        });
    }, intervalMs);
    timer.unref();
  }

  return {
    start() {
      if (!timer) schedule();
    },
    async stop() {
      if (timer) clearTimeout(timer);
      timer = null;
      await current;
    },
  };
}
