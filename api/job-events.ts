// Live job and pipeline events for the gateway's event streams (api/routes/events.ts), fed by
// Postgres LISTEN/NOTIFY on one dedicated connection per gateway process: the `jobs` triggers send
// `NOTIFY job_events, '<job id>'` on every status or progress change (0002_job_progress), the
// `pipelines` trigger `NOTIFY pipeline_events, '<pipeline id>'` on every change of a pipeline or of
// one of its steps (0033_pipeline_events), and the event log's `NOTIFY workspace_events, '<workspace
// id>'` whenever a workspace's log grows (0120_workspace_events). A job notification also refreshes the pipeline whose
// step made that job (its id names the pipeline: shared/pipelines.ts pipelineIdOfStepJob), so a
// step's progress reaches the pipeline's streams as promptly as the job's own.
//
// Each notification for a watched job or pipeline costs one read, however many streams watch it
// (api/event-hub.ts). When the listening connection drops it reconnects with backoff and then
// re-reads everything watched, since changes may have been missed while it was down (every
// (re)connect does, the first one included, so a stream opened before the listener was ready
// misses nothing either).
import type { Logger } from 'pino';
import type { Database } from '../db/index.js';
import type { Job } from '../db/schema.js';
import * as jobsRepo from '../db/repos/jobs.js';
import { JOB_EVENTS_CHANNEL } from '../db/migrations/0002_job_progress.js';
import { PIPELINE_EVENTS_CHANNEL } from '../db/migrations/0033_pipeline_events.js';
import { WORKSPACE_EVENTS_CHANNEL } from '../db/migrations/0120_workspace_events.js';
import { createPgListener, type PgListener } from '../shared/pg-listener.js';
import { pipelineIdOfStepJob } from '../shared/pipelines.js';
import { createWatchTable, type RowWatcher } from './event-hub.js';
import type { PipelineView } from './pipeline-events.js';

interface JobWatcher {
  /** Called with the job's row after each change (and after a reconnect); may repeat a row. */
  onJob(job: Job): void;
  /** The hub is closing (gateway shutdown): end the stream. */
  onClose(): void;
}

export interface JobEventHub {
  /** Starts delivering the job's changes to `watcher`; returns the function that stops it. */
  watch(jobId: string, watcher: JobWatcher): () => void;
  /** Starts delivering the pipeline's changes (its steps' and their jobs' included) to `watcher`. */
  watchPipeline(pipelineId: string, watcher: RowWatcher<PipelineView>): () => void;
  /**
   * Calls `watcher.onEvent` whenever the workspace's event log may have grown (a `workspace_events`
   * notification, 0120_workspace_events, or a reconnect of the listener); the watcher reads the log.
   */
  watchWorkspace(workspaceId: string, watcher: { onEvent(): void; onClose(): void }): () => void;
  /** Whether the listening connection is up (changes are heard now). */
  listening(): boolean;
  /** Job streams open now, over all jobs. */
  watchers(): number;
  /** Job rows read so far (one per notification of a watched job, coalesced; not one per stream). */
  reads(): number;
  /** Pipeline streams open now, and pipeline reads so far (as watchers() and reads() for jobs). */
  pipelines: { watchers(): number; reads(): number };
  /** Closes every watcher, then the listening connection. */
  close(): Promise<void>;
}

export function createJobEventHub(deps: {
  databaseUrl: string;
  db: Database;
  logger?: Logger;
  /** A pipeline as its streams present it (api/pipeline-events.ts readPipelineView). */
  readPipeline(pipelineId: string): Promise<PipelineView | undefined>;
}): JobEventHub {
  const jobs = createWatchTable<Job>({ read: (id) => jobsRepo.getJob(deps.db, id), logger: deps.logger, what: 'job events' });
  const pipelines = createWatchTable<PipelineView>({ read: deps.readPipeline, logger: deps.logger, what: 'pipeline events' });
  const workspaces = new Map<string, Set<{ onEvent(): void; onClose(): void }>>();
  const poke = (workspaceId: string) => {
    for (const w of [...(workspaces.get(workspaceId) ?? [])]) w.onEvent();
  };
  let closed = false;

  // Connected on the first watch: a gateway nobody streams from holds no extra connection.
  let listener: PgListener | null = null;
  const startListening = () =>
    createPgListener({
      databaseUrl: deps.databaseUrl,
      channels: [JOB_EVENTS_CHANNEL, PIPELINE_EVENTS_CHANNEL, WORKSPACE_EVENTS_CHANNEL],
      applicationName: JOB_EVENTS_LISTENER_NAME,
      logger: deps.logger,
      what: 'job events listener',
      onNotification: (channel, id) => {
        if (channel === PIPELINE_EVENTS_CHANNEL) return pipelines.refresh(id);
        if (channel === WORKSPACE_EVENTS_CHANNEL) return poke(id);
        jobs.refresh(id);
        const pipelineId = pipelineIdOfStepJob(id);
        if (pipelineId) pipelines.refresh(pipelineId);
      },
      onConnected: () => {
        jobs.refreshAll();
        pipelines.refreshAll();
        for (const id of workspaces.keys()) poke(id);
      },
    });
  const listen = () => {
    if (!closed) listener ??= startListening();
  };

  return {
    watch(jobId, watcher) {
      listen();
      return jobs.watch(jobId, { onRow: (job) => watcher.onJob(job), onClose: () => watcher.onClose() });
    },
    watchPipeline(pipelineId, watcher) {
      listen();
      return pipelines.watch(pipelineId, watcher);
    },
    watchWorkspace(workspaceId, watcher) {
      if (closed) {
        watcher.onClose();
        return () => undefined;
      }
      listen();
      const set = workspaces.get(workspaceId) ?? new Set();
      workspaces.set(workspaceId, set);
      set.add(watcher);
      return () => {
        set.delete(watcher);
        if (set.size === 0 && workspaces.get(workspaceId) === set) workspaces.delete(workspaceId);
      };
    },
    listening: () => listener?.healthy() ?? false,
    watchers: () => jobs.watchers(),
    reads: () => jobs.reads(),
    pipelines: { watchers: () => pipelines.watchers(), reads: () => pipelines.reads() },
    async close() {
      closed = true;
      jobs.close();
      pipelines.close();
      for (const set of [...workspaces.values()]) for (const w of [...set]) w.onClose();
      workspaces.clear();
      await listener?.close();
    },
  };
}

/** The application_name of the listening connection (operators and tests can find it in pg_stat_activity). */
export const JOB_EVENTS_LISTENER_NAME = 'gateway-job-events';
