// The watchers of one kind of row (a job, a pipeline) for the gateway's event streams, fed by the
// notifications the process's one LISTEN connection hears (api/job-events.ts). Each notification for
// a watched key costs one read of it, however many streams watch it; the result is then handed to
// every one of them. A key nobody watches costs nothing.
//
// Reads of one key never overlap: a notification that arrives during a read marks the key dirty and
// one more read follows, so the last change is always read and bursts collapse.
import type { Logger } from 'pino';

const READ_RETRY_MS = 1_000;

export interface RowWatcher<T> {
  /** Called with the row after each change (and after a reconnect of the listener); may repeat a row. */
  onRow(row: T): void;
  /** The hub is closing (gateway shutdown): end the stream. */
  onClose(): void;
}

interface WatchTable<T> {
  /** Starts delivering the key's changes to `watcher`; returns the function that stops it. */
  watch(key: string, watcher: RowWatcher<T>): () => void;
  /** Reads the key again if it is watched (a notification named it). */
  refresh(key: string): void;
  /** Reads every watched key again (the listener reconnected: changes may have been missed). */
  refreshAll(): void;
  /** Streams open now, over all keys. */
  watchers(): number;
  /** Rows read so far (one per notification of a watched key, coalesced; not one per stream). */
  reads(): number;
  /** Closes every watcher; later watches are closed at once. */
  close(): void;
}

export function createWatchTable<T>(opts: { read(key: string): Promise<T | undefined>; logger?: Logger; what: string }): WatchTable<T> {
  const byKey = new Map<string, Set<RowWatcher<T>>>();
  // Per key: a read is running (false) or running with another one owed after it (true).
  const reading = new Map<string, boolean>();
  let watcherCount = 0;
  let readCount = 0;
  let closed = false;

  const refresh = (key: string) => {
    if (!byKey.has(key) || closed) return;
    if (reading.has(key)) {
      reading.set(key, true);
      return;
    }
    reading.set(key, false);
    readCount++;
    void (async () => {
      try {
        const row = await opts.read(key);
        const watchers = byKey.get(key);
        if (row && watchers) for (const w of [...watchers]) w.onRow(row);
      } catch (err) {
        // Postgres is unreachable or slow: read again shortly, while someone still watches.
        opts.logger?.warn({ key, err: { message: (err as Error).message } }, `${opts.what}: could not read; retrying`);
        setTimeout(() => refresh(key), READ_RETRY_MS).unref();
      } finally {
        const again = reading.get(key);
        reading.delete(key);
        if (again) refresh(key);
      }
    })();
  };

  return {
    watch(key, watcher) {
      if (closed) {
        watcher.onClose();
        return () => undefined;
      }
      let set = byKey.get(key);
      if (!set) byKey.set(key, (set = new Set()));
      set.add(watcher);
      watcherCount++;
      let active = true;
      return () => {
        if (!active) return;
        active = false;
        watcherCount--;
        set.delete(watcher);
        if (set.size === 0 && byKey.get(key) === set) byKey.delete(key);
      };
    },
    refresh,
    refreshAll: () => {
      for (const key of byKey.keys()) refresh(key);
    },
    watchers: () => watcherCount,
    reads: () => readCount,
    close() {
      closed = true;
      const all = [...byKey.values()].flatMap((s) => [...s]);
      byKey.clear();
      watcherCount = 0;
      for (const w of all) w.onClose();
    },
  };
}
