// What the gateway is built from (createApp's argument); routers receive it too. Its own module so
// the app and its routers do not import each other.
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import type { Storage } from '../shared/storage.js';
import type { ApiMetrics } from './metrics.js';
import type { JobService } from '../jobs/index.js';

export interface AppDeps {
  config: Config;
  db: Database;
  /** The rate limiter's pool; createApp makes (and closes) its own when not given. */
  limiterDb?: Database;
  storage: Storage;
  temporal: Client;
  logger: Logger;
  metrics?: ApiMetrics;
  /** The process's job service; createApp builds it (over `temporal`) when not given. */
  jobs?: JobService;
  /** What time it is for budget periods and model retirements (default the system clock): tests move it past a period's end or a retirement date. */
  clock?: () => Date;
}
