// Webhook delivery (activities/webhooks.ts): timeouts, retries, concurrency, the circuit breaker.
import { bool, int, optionalString } from './env-types.js';

export const webhooksEnv = {
  WEBHOOK_TIMEOUT_MS: int(10_000, 100, 60_000).describe('Each delivery attempt must be answered within this long.'),
  WEBHOOK_RETRY_INITIAL_MS: int(5_000, 10).describe('Failed attempts are retried with exponential backoff starting this far apart.'),
  WEBHOOK_RETRY_MAX_INTERVAL_MS: int(3_600_000, 10).describe('The longest gap between two retries.'),
  WEBHOOK_RETRY_FOR_MS: int(86_400_000, 1_000).describe('How long an event is retried in all (a day) before it is given up.'),
  WEBHOOK_RETRY_MAX_ATTEMPTS: int(0, 0).describe(
    'At most this many attempts per delivery (and per redelivery) before it is given up; 0: no count, only WEBHOOK_RETRY_FOR_MS bounds them.',
  ),
  WEBHOOK_ACTIVITY_CONCURRENCY: int(50, 1).describe(
    'Deliveries run on their own queue (`<prefix>-webhooks`, the `webhooks` role): this many attempts at once per worker.',
  ),
  WEBHOOK_WORKSPACE_CONCURRENCY: int(10, 1).describe(
    "At most this many of one workspace's events in flight across the fleet (the rest wait in the outbox, in order).",
  ),
  // The breaker (shared/webhooks/circuit.ts) is per (workspace, destination) and counts connection
  // errors, timeouts and 5xx.
  WEBHOOK_BREAKER_FAILURES: int(10, 1).describe(
    'The circuit per (workspace, destination) opens after at least this many failures (connection errors, timeouts, 5xx) and WEBHOOK_BREAKER_SPAN_MS without a success.',
  ),
  WEBHOOK_BREAKER_SPAN_MS: int(30_000, 0).describe('How long without a success (besides WEBHOOK_BREAKER_FAILURES failures) opens a circuit.'),
  WEBHOOK_BREAKER_COOLDOWN_MS: int(60_000, 10).describe('Attempts to an open circuit wait this long (not counted as retries).'),
  WEBHOOK_BREAKER_TRIALS: int(3, 1).describe('After the cooldown this many trials go out; the first success closes the circuit.'),
  WEBHOOK_OUTBOX_RETENTION_DAYS: int(7, 1, 3650).describe(
    'Finished events (delivered, given up or superseded) are removed from the outbox after this many days.',
  ),
  WEBHOOK_SECRETS_KEY: optionalString
    .meta({ valueType: 'string (secret)' })
    .describe(
      'Key material for the at-rest encryption of webhook signing secrets. Required in production by the processes that read it (the webhooks role, the admin CLI), and must differ from S3_SECRET_KEY there; in development and tests it defaults to S3_SECRET_KEY.',
    ),
  WEBHOOK_SECRETS_KEY_PREVIOUS: optionalString
    .meta({ valueType: 'comma-separated strings (secret)' })
    .describe(
      'Rotation of WEBHOOK_SECRETS_KEY: the previous key material, still used to open secrets stored under it (never to store). Set the new key as WEBHOOK_SECRETS_KEY and the old one here, run `admin webhook secrets rekey`, then drop it.',
    ),
  WEBHOOK_ALLOW_LOOPBACK: bool(false).describe(
    'Test-only: webhook targets on loopback (http or https, any port) pass the SSRF guard. Refused when NODE_ENV=production.',
  ),
};
