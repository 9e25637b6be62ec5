// createActivities: every activity of the service, built from its clients, grouped by the task
// queue that runs it so fleets can run apart (io: Postgres; fetch: upload-from-url and input
// preparation, which fetches URL inputs; webhooks: deliveries; provider:<name>: provider calls and
// output streaming).
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Database } from '../db/index.js';
import type { Config } from '../shared/config.js';
import type { Storage } from '../shared/storage.js';
import type { JobService } from '../jobs/index.js';
import type { ProviderName } from '../workflows/definitions.js';
import type { ProviderAdapter } from './providers/types.js';
import { createLocalAdapter } from './providers/local/adapter.js';
import { createProviders } from './providers/index.js';
import { mediaToolsFrom } from './providers/media-tools.js';
import { createJobIoActivities, createJobProviderActivities, createProgressWriter, type JobActivityDeps } from './jobs.js';
import { createWebhookActivities, type WebhookActivityDeps } from './webhooks.js';
import { createPipelineActivities } from './pipelines.js';
import { createBatchActivities, pipelineItemStarter } from './batches.js';
import { createBulkActionActivities } from './bulk-actions.js';
import { createUploadActivities, createWorkspaceFetchSlots, fetchSlotLeaseMs, fetchRemoteInput, type FetchHooks } from './uploads.js';

interface ActivityDeps {
  db: Database;
  storage: Storage;
  /** The process's job service (worker/workers.ts builds it): every status move goes through it. */
  jobs: JobService;
  config: Config;
  metrics?: NonNullable<JobActivityDeps['metrics']> & NonNullable<WebhookActivityDeps['metrics']>;
  /** Tests inject a resolver / connector so remote fetches never leave loopback. */
  fetchHooks?: FetchHooks;
  logger?: Logger;
  /** The process's Temporal client, when it has one: a batch's pipeline items start their pipelines' workflows on it. */
  temporal?: Client | null;
}

function createAdapters(config: Config): (name: ProviderName) => ProviderAdapter {
  const local = createLocalAdapter({
    ffmpegPath: config.FFMPEG_PATH,
    ffprobePath: config.FFPROBE_PATH,
    media: mediaToolsFrom(config),
    espeakPath: config.ESPEAK_PATH,
    latencyMs: config.LOCAL_RENDER_LATENCY_MS,
    faults: config.LOCAL_RENDER_FAULTS,
  });
  const providers = createProviders(config, local);
  return (name) => providers.adapterFor(name);
}

export function createActivities(deps: ActivityDeps) {
  const adapterFor = createAdapters(deps.config);
  // One workspace holds at most this many of the fleet's fetch slots at once.
  const fetchDeps = {
    ...deps,
    fetchSlots: createWorkspaceFetchSlots(deps.db, deps.config.FETCH_PER_WORKSPACE_CONCURRENCY, fetchSlotLeaseMs(deps.config)),
  };
  const jobDeps: JobActivityDeps = {
    ...deps,
    adapterFor,
    fetchRemoteInput: (args) => fetchRemoteInput(fetchDeps, args),
  };
  // prepareProviderRequest fetches URL inputs, so it runs on the fetch queue only.
  const { prepareProviderRequest, ...jobIo } = createJobIoActivities(jobDeps);
  const uploads = createUploadActivities(fetchDeps);
  const webhooks = createWebhookActivities({
    db: deps.db,
    config: deps.config,
    resolver: deps.fetchHooks?.resolver,
    logger: deps.logger,
    metrics: deps.metrics,
  });
  return {
    // The job pipeline's Postgres steps and the pipelines' and batches' parent steps: local activities of the workflows role, and the io queue's.
    io: {
      ...jobIo,
      ...createPipelineActivities({ db: deps.db, jobs: deps.jobs, config: deps.config }),
      ...createBatchActivities({
        db: deps.db,
        jobs: deps.jobs,
        config: deps.config,
        ...(deps.temporal ? { startPipeline: pipelineItemStarter(deps.temporal, deps.db, deps.config, deps.logger) } : {}),
      }),
      ...createBulkActionActivities({ db: deps.db, storage: deps.storage, jobs: deps.jobs }),
    },
    fetch: { prepareProviderRequest, ...uploads },
    webhooks,
    provider: createJobProviderActivities({ ...jobDeps, progress: createProgressWriter(deps.db, deps.config.PROGRESS_WRITE_INTERVAL_MS) }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
