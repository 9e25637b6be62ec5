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
import type { Logger } from 'pino';
import type { Database } from '../db/index.js';
import type { Job } from '../db/schema.js';
import * as jobsRepo from '../db/repos/jobs.js';
import { JOB_EVENTS_CHANNEL } from '../db/migrations/0002_job_progress.js';
import { createPgListener, type PgListener } from '../shared/pg-listener.js';

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
  let listener: PgListener | null = null;
  const startListening = () =>
    createPgListener({
      databaseUrl: deps.databaseUrl,
      channels: [JOB_EVENTS_CHANNEL],
      applicationName: JOB_EVENTS_LISTENER_NAME,
      logger: deps.logger,
      what: 'job events listener',
      onNotification: (_channel, jobId) => refresh(jobId),
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

/** The application_name of the listening connection (operators and tests can find it in pg_stat_activity). */
export const JOB_EVENTS_LISTENER_NAME = 'gateway-job-events';
