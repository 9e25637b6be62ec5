// Small pieces every page uses: the API's error shown with its message, a job's status badge, and
// the hook that loads a value from the API (a 401 sends the console back to sign-in).
import { useEffect, useState } from 'preact/hooks';
import { isUnauthorized, messageOf } from './api.js';

export function ErrorNote({ error }: { error: string | null }) {
  if (!error) return null;
  return (
    <p role="alert" class="error">
      {error}
    </p>
  );
}

/** Reports a failure: a 401 ends the signed-in view, anything else is the page's to show. */
export function failure(err: unknown): string {
  if (isUnauthorized(err)) dispatchEvent(new Event('console:signed-out'));
  return messageOf(err);
}

export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { value: T | null; error: string | null; reload(): void } {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setError(null);
    load()
      .then((v) => live && setValue(v))
      .catch((err: unknown) => live && setError(failure(err)));
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { value, error, reload: () => setTick((t) => t + 1) };
}

export const when = (ms: number | null | undefined): string => (ms ? new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + ' UTC' : '—');

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge ${status}`}>{status}</span>;
}
