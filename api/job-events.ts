// Live job events for the gateway's event streams (api/routes/events.ts), fed by Postgres
// LISTEN/NOTIFY: the `jobs` triggers send `NOTIFY job_events, '<job id>'` on every status or
// progress change (0002_job_progress). One dedicated connection per gateway process LISTENs, and
// each notification for a watched job costs one read of its row, however many streams watch it;
// the row is then handed to every one of them. A job that is not watched costs nothing.
//
// Reads of one job never overlap: a notification that arrives during a read marks the job dirty and
// one more read follows, so the last change is always read and bursts collapse. When the listening
// connection drops it reconnects with backoff and then re-reads every watched job, since changes
// may have been missed while it was down (every (re)connect does, the first one included, so a
// stream opened before the listener was ready misses nothing either).
import pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from '../db/index.js';
import type { Job } from '../db/schema.js';
import * as jobsRepo from '../db/repos/jobs.js';
import { JOB_EVENTS_CHANNEL } from '../db/migrations/0002_job_progress.js';

const LISTEN_RETRY_MIN_MS = 250;
const LISTEN_RETRY_MAX_MS = 10_000;
const READ_RETRY_MS = 1_000;

export interface JobWatcher {
  /** Called with the job's row after each change (and after a reconnect); may repeat a row. */
  onJob(job: Job): void;
  /** The hub is closing (gateway shutdown): end the stream. */
  onClose(): void;
}

export interface JobEventHub {
  /** Starts delivering the job's changes to `watcher`; returns the function that stops it. */
  watch(jobId: string, watcher: JobWatcher): () => void;
  /** Whether the listening connection is up (changes are heard now). */
  listening(): boolean;
  /** Streams open now, over all jobs. */
  watchers(): number;
  /** Job rows read so far (one per notification of a watched job, coalesced; not one per stream). */
  reads(): number;
  /** Closes every watcher, then the listening connection. */
  close(): Promise<void>;
}

export function createJobEventHub(deps: { databaseUrl: string; db: Database; logger?: Logger }): JobEventHub {
  const byJob = new Map<string, Set<JobWatcher>>();
  // Per job: a read is running (false) or running with another one owed after it (true).
  const reading = new Map<string, boolean>();
  let watcherCount = 0;
  let readCount = 0;
  let closed = false;

  const refresh = (jobId: string) => {
    if (!byJob.has(jobId) || closed) return;
    if (reading.has(jobId)) {
      reading.set(jobId, true);
      return;
    }
    reading.set(jobId, false);
    readCount++;
    void (async () => {
      try {
        const job = await jobsRepo.getJob(deps.db, jobId);
        const watchers = byJob.get(jobId);
        if (job && watchers) for (const w of [...watchers]) w.onJob(job);
      } catch (err) {
        // Postgres is unreachable or slow: read again shortly, while someone still watches.
        deps.logger?.warn({ jobId, err: { message: (err as Error).message } }, 'job events: could not read the job; retrying');
        setTimeout(() => refresh(jobId), READ_RETRY_MS).unref();
      } finally {
        const again = reading.get(jobId);
        reading.delete(jobId);
        if (again) refresh(jobId);
      }
    })();
  };

  // Connected on the first watch: a gateway nobody streams from holds no extra connection.
  let listener: Listener | null = null;
  const startListening = () =>
    listen(deps.databaseUrl, deps.logger, {
      onNotification: refresh,
      onConnected: () => {
        for (const jobId of byJob.keys()) refresh(jobId);
      },
    });

  return {
    watch(jobId, watcher) {
      if (closed) {
        watcher.onClose();
        return () => undefined;
      }
      listener ??= startListening();
      let set = byJob.get(jobId);
      if (!set) byJob.set(jobId, (set = new Set()));
      set.add(watcher);
      watcherCount++;
      let active = true;
      return () => {
        if (!active) return;
        active = false;
        watcherCount--;
        set.delete(watcher);
        if (set.size === 0 && byJob.get(jobId) === set) byJob.delete(jobId);
      };
    },
    listening: () => listener?.healthy() ?? false,
    watchers: () => watcherCount,
    reads: () => readCount,
    async close() {
      closed = true;
      const all = [...byJob.values()].flatMap((s) => [...s]);
      byJob.clear();
      watcherCount = 0;
      for (const w of all) w.onClose();
      await listener?.close();
    },
  };
}

interface Listener {
  healthy(): boolean;
  close(): Promise<void>;
}

/** The application_name of the listening connection (operators and tests can find it in pg_stat_activity). */
export const JOB_EVENTS_LISTENER_NAME = 'gateway-job-events';

/** One connection LISTENing on `job_events`, reconnecting with backoff when it drops. */
function listen(databaseUrl: string, logger: Logger | undefined, handlers: { onNotification(jobId: string): void; onConnected(): void }): Listener {
  let client: pg.Client | null = null;
  let healthy = false;
  let closed = false;
  let retryMs = LISTEN_RETRY_MIN_MS;
  let retryTimer: NodeJS.Timeout | null = null;

  const lost = (c: pg.Client) => {
    if (client !== c) return;
    client = null;
    healthy = false;
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
    retryMs = Math.min(retryMs * 2, LISTEN_RETRY_MAX_MS);
  };

  const connect = async () => {
    if (closed) return;
    const c = new pg.Client({ connectionString: databaseUrl, application_name: JOB_EVENTS_LISTENER_NAME });
    c.on('error', () => lost(c));
    c.on('end', () => lost(c));
    c.on('notification', (msg) => {
      if (msg.channel === JOB_EVENTS_CHANNEL && msg.payload) handlers.onNotification(msg.payload);
    });
    client = c;
    try {
      await c.connect();
      await c.query(`LISTEN ${JOB_EVENTS_CHANNEL}`);
      if (closed || client !== c) {
        await c.end().catch(() => undefined);
        return;
      }
      healthy = true;
      retryMs = LISTEN_RETRY_MIN_MS;
      handlers.onConnected();
    } catch (err) {
      logger?.warn({ err: { message: (err as Error).message } }, 'job events listener unavailable; retrying');
      lost(c);
    }
  };

  void connect();

  return {
    healthy: () => healthy,
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
