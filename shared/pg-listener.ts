// One dedicated Postgres connection LISTENing on a few channels, reconnecting with backoff when it
// drops. The gateway keeps two: the key listener (api/auth.ts) and the job-events hub
// (api/job-events.ts); the worker one, its webhook dispatcher (worker/webhook-dispatcher.ts).
//
// On every (re)connect it LISTENs first, then runs `load` (state the notifications then keep
// current), and only then counts as healthy; notifications that arrive during the load are held
// and delivered after `onConnected`, so nothing between the load and the first notification is
// missed. While the connection is down `healthy()` is false and callers must not trust what they
// learned from it (`onLost` tells them).
//
// `sync()` answers "has every notification committed before now been delivered?": it runs
// `select 1` on the listening connection, and Postgres sends a session the notifications it has
// pending before that query's ReadyForQuery. One round trip is in flight at a time and at most
// one more is queued behind it for the callers that arrived after the in-flight one started, so
// any number of concurrent callers cost about one round trip each.
import pg from 'pg';
import type { Logger } from 'pino';

const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 10_000;
/** A sync slower than this answers false (the caller then asks Postgres directly). */
const SYNC_TIMEOUT_MS = 1_000;

export interface PgListener {
  healthy(): boolean;
  /**
   * Resolves true once every notification committed before the call has been delivered; false when
   * that cannot be known (connection down, or the round trip took longer than SYNC_TIMEOUT_MS).
   */
  sync(): Promise<boolean>;
  close(): Promise<void>;
}

interface PgListenerOptions<T> {
  databaseUrl: string;
  channels: readonly string[];
  /** Shown in pg_stat_activity, so operators and tests can find the connection. */
  applicationName?: string;
  logger?: Logger;
  /** Names the listener in log lines. */
  what: string;
  onNotification(channel: string, payload: string): void;
  /** Reads, on each new connection once it LISTENs, the state that notifications keep current. */
  load?(client: pg.Client): Promise<T>;
  /** The connection is ready, with what `load` read; the notifications held meanwhile follow. */
  onConnected?(loaded: T | undefined): void;
  /** The connection dropped: what was learned through it may be stale until the next onConnected. */
  onLost?(): void;
}

export function createPgListener<T = void>(opts: PgListenerOptions<T>): PgListener {
  let client: pg.Client | null = null;
  let healthy = false;
  let closed = false;
  let retryMs = RETRY_MIN_MS;
  let retryTimer: NodeJS.Timeout | null = null;

  const lost = (c: pg.Client) => {
    if (client !== c) return;
    client = null;
    healthy = false;
    opts.onLost?.();
    c.removeAllListeners('notification');
    c.end().catch(() => undefined);
    schedule();
  };

  const schedule = () => {
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      void connect();
    }, retryMs);
    retryTimer.unref();
    retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
  };

  const connect = async () => {
    if (closed) return;
    const c = new pg.Client({ connectionString: opts.databaseUrl, ...(opts.applicationName ? { application_name: opts.applicationName } : {}) });
    c.on('error', () => lost(c));
    c.on('end', () => lost(c));
    let held: [string, string][] | null = [];
    c.on('notification', (msg) => {
      if (!opts.channels.includes(msg.channel) || !msg.payload) return;
      if (held) held.push([msg.channel, msg.payload]);
      else opts.onNotification(msg.channel, msg.payload);
    });
    client = c;
    try {
      await c.connect();
      for (const channel of opts.channels) await c.query(`LISTEN ${channel}`);
      const loaded = opts.load ? await opts.load(c) : undefined;
      if (closed || client !== c) {
        await c.end().catch(() => undefined);
        return;
      }
      opts.onConnected?.(loaded);
      const pending = held;
      held = null;
      for (const [channel, payload] of pending) opts.onNotification(channel, payload);
      healthy = true;
      retryMs = RETRY_MIN_MS;
    } catch (err) {
      opts.logger?.warn({ err: { message: (err as Error).message } }, `${opts.what} unavailable; retrying`);
      lost(c);
    }
  };

  void connect();

  let inFlight: Promise<boolean> | null = null;
  let queued: Promise<boolean> | null = null;
  const roundTrip = (): Promise<boolean> => {
    const c = client;
    if (!c || !healthy) return Promise.resolve(false);
    let timer: NodeJS.Timeout | undefined;
    const p = Promise.race([
      c.query('select 1').then(
        () => client === c && healthy,
        () => false,
      ),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), SYNC_TIMEOUT_MS);
        timer.unref();
      }),
    ]).finally(() => {
      clearTimeout(timer);
      if (inFlight === p) inFlight = null;
    });
    return p;
  };

  return {
    healthy: () => healthy,
    sync() {
      if (!inFlight) return (inFlight = roundTrip());
      queued ??= inFlight.then(() => {
        queued = null;
        return (inFlight = roundTrip());
      });
      return queued;
    },
    async close() {
      closed = true;
      healthy = false;
      if (retryTimer) clearTimeout(retryTimer);
      const c = client;
      client = null;
      if (c) {
        c.removeAllListeners();
        c.on('error', () => undefined);
        await c.end().catch(() => undefined);
      }
    },
  };
}
