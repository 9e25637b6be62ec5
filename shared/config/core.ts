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

  TEMPORAL_ADDRESS: z.string().min(1).meta({ valueType: 'host:port' }).describe('Temporal frontend address (required), e.g. `127.0.0.1:7233`.'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default').meta({ valueType: 'string' }).describe('Temporal namespace of every workflow.'),
  TASK_QUEUE_PREFIX: z
    .string()
    .regex(/^[a-z0-9-]+$/)
    .default('media')
    .meta({ valueType: 'lowercase letters, digits and `-`' })
    .describe('Prefix of every task queue name (`<prefix>-workflows`, `<prefix>-io`, `<prefix>-fetch`, `<prefix>-webhooks`, one per provider fleet).'),
  FAIR_SHARE: bool(true).describe(
    "Fair share per workspace: job, provider-cancel and webhook workflows start with the workspace id as their Temporal fairness key, weighted by the workspace's share (`workspace set-share`), so each task queue serves the workspaces' backlogs in proportion to their weights. Off: no fairness key, one first-in-first-out queue per priority. Needs a server with `matching.enableFairness` (docs/operations/fair-share.md).",
  ),
};
