// Process, Postgres and Temporal: what every process needs to start.
import { z } from 'zod';
import { bool, int, url } from './env-types.js';

export const coreEnv = {
  NODE_ENV: z
    .enum(['development', 'production', 'test'])
    .default('development')
    .describe(
      '`production` refuses test-only switches and placeholder providers (unless ALLOW_PLACEHOLDER_PROVIDERS) and requires WEBHOOK_SECRETS_KEY where it is read.',
    ),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('Lowest pino log level written.'),

  DATABASE_URL: url.describe(
    "Postgres connection URL (required). TLS goes in the URL: `?sslmode=verify-full&sslrootcert=/path/to/ca.pem` verifies the server's certificate against that CA file and its host name (node-postgres 8 reads both: pg-connection-string loads the file, and the host is checked as the TLS server name); `sslmode=verify-full` alone trusts the system roots. A CA file that cannot be read is refused at start, naming the file.",
  ),
  DATABASE_POOL_SIZE: int(10, 1, 200).describe(
    "Connections in the process's Postgres pool. A worker running the `workflows` or `io` role uses at least IO_ACTIVITY_CONCURRENCY + 4 whatever this says (one connection per Postgres step).",
  ),
  DATABASE_STATEMENT_TIMEOUT_MS: int(30_000, 0, 3_600_000).describe(
    "Longest one statement of the service's Postgres pools may run (Postgres `statement_timeout`, set on every connection; 0: no limit). A statement past it fails and its caller retries by its own rules. Migrations, the admin CLI and retention sweeps use DATABASE_LONG_STATEMENT_TIMEOUT_MS instead.",
  ),
  DATABASE_LOCK_TIMEOUT_MS: int(5_000, 0, 3_600_000).describe(
    'Longest a statement waits for a row or table lock (Postgres `lock_timeout`; 0: no limit). A step stuck behind a lock another session holds (a pipeline row, a job row) fails with a retryable error instead of holding its slot and connection for ever.',
  ),
  DATABASE_LONG_STATEMENT_TIMEOUT_MS: int(600_000, 0, 86_400_000).describe(
    'Statement and lock timeout of the work that is long by nature: migrations (`migrate`), the admin CLI and the retention sweeps (expired uploads, audit events, the webhook outbox). 0: no limit.',
  ),

  TEMPORAL_ADDRESS: z.string().min(1).meta({ valueType: 'host:port' }).describe('Temporal frontend address (required), e.g. `127.0.0.1:7233`.'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default').meta({ valueType: 'string' }).describe('Temporal namespace of every workflow.'),
  TASK_QUEUE_PREFIX: z
    .string()
    .regex(/^[a-z0-9-]+$/)
    .default('media')
    .meta({ valueType: 'lowercase letters, digits and `-`' })
    .describe('Prefix of every task queue name (`<prefix>-workflows`, `<prefix>-io`, `<prefix>-fetch`, `<prefix>-webhooks`, one per provider fleet).'),
  FAIR_SHARE: bool(true).describe(
    "Fair share per workspace: job, pipeline-parent, upload-from-url, provider-cancel and webhook workflows start with the workspace id as their Temporal fairness key, weighted by the workspace's share (`workspace set-share`), so each task queue serves the workspaces' backlogs in proportion to their weights. Off: no fairness key, one first-in-first-out queue per priority. Needs a server with `matching.enableFairness` (docs/operations/fair-share.md).",
  ),
};
