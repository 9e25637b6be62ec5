// The one configuration module of both processes (gateway and workers): every environment
// variable the service reads is named here, validated once at start, and failing fast with the
// variable's name (never its value, which may be a secret).
import { isIP } from 'node:net';
import { z } from 'zod';
import { localRenderedModels, parseRouteOrder } from './routing.js';
import { providerConfigSchema } from './providers/config.js';

const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
    .optional()
    .transform((v) => (v === undefined || v === '' ? fallback : v === 'true' || v === '1' || v === 'yes'));

const int = (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return fallback;
      const n = Number(v);
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({ code: 'custom', message: `must be an integer from ${min} to ${max}` });
        return z.NEVER;
      }
      return n;
    });

/** An optional integer: unset or empty is null (the feature is off). */
const optionalInt = (min: number, max: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return null;
      const n = Number(v);
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({ code: 'custom', message: `must be an integer from ${min} to ${max}` });
        return z.NEVER;
      }
      return n;
    });

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v));

const url = z.url();

const proxyNames = ['loopback', 'linklocal', 'uniquelocal'];
/** TRUST_PROXY: false (none), a hop count, or a list of addresses, CIDR ranges and range names. */
const trustProxy = z
  .string()
  .optional()
  .transform((v, ctx): false | number | string[] => {
    const s = (v ?? '').trim();
    if (s === '' || s === 'false') return false;
    if (/^\d+$/.test(s)) return Number(s);
    const items = s.split(',').map((x) => x.trim());
    const valid = (item: string) => {
      if (proxyNames.includes(item)) return true;
      const [addr = '', bits, ...rest] = item.split('/');
      const family = isIP(addr);
      return family !== 0 && rest.length === 0 && (bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128)));
    };
    if (items.every(valid)) return items;
    ctx.addIssue({ code: 'custom', message: `must be empty, a hop count, or a comma-separated list of addresses, CIDR ranges and ${proxyNames.join('/')} (never "true": every peer could then forge its address)` });
    return z.NEVER;
  });

export const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  // Postgres
  DATABASE_URL: url,
  DATABASE_POOL_SIZE: int(10, 1, 200),

  // Temporal
  TEMPORAL_ADDRESS: z.string().min(1),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TASK_QUEUE_PREFIX: z.string().regex(/^[a-z0-9-]+$/).default('media'),

  // Object storage (any S3-compatible server)
  S3_ENDPOINT: url,
  S3_ACCESS_KEY: z.string().min(1),
  S3_SECRET_KEY: z.string().min(1),
  S3_BUCKET: z.string().min(3).default('media'),
  S3_REGION: z.string().default('us-east-1'),
  S3_PUBLIC_BASE_URL: optionalString.pipe(url.optional()),
  // The S3 endpoint clients reach (a CDN or public hostname in front of S3_ENDPOINT): presigned
  // URLs are signed for it, since a signature covers the host. Defaults to S3_ENDPOINT.
  S3_PRESIGN_ENDPOINT: optionalString.pipe(url.optional()),
  PRESIGN_EXPIRY_SECONDS: int(900, 60, 7 * 24 * 3600),

  // Gateway
  HOST: z.string().default('127.0.0.1'),
  PORT: int(8080, 0, 65535),
  PUBLIC_BASE_URL: optionalString.pipe(url.optional()),
  RATE_LIMIT_POLL_PER_MIN: int(120, 1),
  RATE_LIMIT_GENERATE_PER_MIN: int(30, 1),
  // A workspace whose customers canceled more than CANCEL_CHURN_LIMIT jobs after their submit to a
  // provider within CANCEL_CHURN_WINDOW_MS gets 429 cancel_churn_limited on create (0: no limit).
  CANCEL_CHURN_LIMIT: int(20, 0),
  CANCEL_CHURN_WINDOW_MS: int(3_600_000, 1_000, 30 * 24 * 3_600_000),
  PROGRESS_QUERY_TIMEOUT_MS: int(300, 10, 10_000),
  // Event streams (GET /v1/{kind}/{id}/events): a `: ping` comment this often keeps proxies from
  // closing a quiet stream; shorter only in tests.
  SSE_HEARTBEAT_MS: int(15_000, 10, 600_000),
  // Open event streams allowed per API key, per workspace and per gateway process (api/stream-limits.ts).
  SSE_MAX_STREAMS_PER_KEY: int(20, 1),
  SSE_MAX_STREAMS_PER_WORKSPACE: int(50, 1),
  SSE_MAX_STREAMS: int(2_000, 1),
  // A stream whose client has not read what was written within this long is closed, not buffered.
  SSE_DRAIN_TIMEOUT_MS: int(10_000, 10, 600_000),
  // Sockets the gateway holds at once (every client, streams included); past it, new ones are dropped.
  GATEWAY_MAX_CONNECTIONS: int(10_000, 1),
  // Sockets one client address may hold at once; past it, its new ones are dropped. Peers
  // TRUST_PROXY trusts (the load balancer) are exempt: the balancer limits its clients itself.
  GATEWAY_MAX_CONNECTIONS_PER_CLIENT: int(256, 1),
  // A request's headers must arrive within GATEWAY_HEADERS_TIMEOUT_MS (slowloris), the whole
  // request within GATEWAY_REQUEST_TIMEOUT_MS (else 408 and the socket is closed). An idle
  // keep-alive socket is closed after GATEWAY_KEEP_ALIVE_TIMEOUT_MS: longer than the load
  // balancer's idle timeout for its upstream connections, so the gateway never closes one the
  // balancer is about to reuse.
  GATEWAY_HEADERS_TIMEOUT_MS: int(20_000, 100, 600_000),
  GATEWAY_REQUEST_TIMEOUT_MS: int(300_000, 1_000, 3_600_000),
  GATEWAY_KEEP_ALIVE_TIMEOUT_MS: int(65_000, 1_000, 600_000),
  // Peers whose X-Forwarded-For is believed (Express `trust proxy`): empty (default) trusts none;
  // a hop count; or addresses, CIDR ranges and loopback/linklocal/uniquelocal, comma-separated.
  // The client address it yields keys the /media rate limit and the per-client connection cap.
  TRUST_PROXY: trustProxy,
  // Sliding rate-limit window; shorter only in tests, which cannot wait a minute.
  RATE_LIMIT_WINDOW_MS: int(60_000, 1_000, 3_600_000),
  // A create answers even when Temporal is down: past this, the reconciler starts the workflow.
  WORKFLOW_START_TIMEOUT_MS: int(3_000, 100, 60_000),
  UPLOAD_FROM_URL_TIMEOUT_MS: int(60_000, 1000),
  // Uploads (all paths): images above this many pixels are refused (decompression bombs).
  UPLOAD_MAX_IMAGE_PIXELS: int(40_000_000, 1),
  // Direct uploads: lifetime of the presigned POST, and how long a pending upload waits for its
  // completion before the reconciler's sweep removes it and its object.
  DIRECT_UPLOAD_EXPIRY_SECONDS: int(900, 60, 7 * 24 * 3600),
  PENDING_UPLOAD_TTL_SECONDS: int(86_400, 1),
  // Refused (failed) upload records are removed this many days after they failed; their bytes were
  // removed at once.
  FAILED_UPLOAD_RETENTION_DAYS: int(7, 1, 3650),
  // Completed uploads are served and usable as job inputs this long (default 30 days), then the
  // reconciler's sweep removes their objects; a request may ask for 1 s up to the maximum instead.
  UPLOAD_RETENTION_SECONDS: int(30 * 86_400, 1),
  UPLOAD_MAX_RETENTION_SECONDS: int(90 * 86_400, 1),
  // Bytes one workspace's uploads may hold (completed, and pending at their declared size), in MB.
  WORKSPACE_UPLOAD_QUOTA_MB: int(10_240, 1),
  // Job outputs (everything under jobs/) expire this many days after they were stored, by a bucket
  // lifecycle rule the worker applies at start (shared/retention.ts). Unset: kept until deleted.
  OUTPUT_RETENTION_DAYS: optionalInt(1, 36_500),
  // Multipart uploads (POST /v1/upload) one API key may run at once on a gateway (429 past it).
  UPLOAD_MAX_CONCURRENT_PER_KEY: int(4, 1),
  // The slowest upload allowed: one that receives fewer than UPLOAD_MIN_BYTES_PER_SEC on average
  // over a window of UPLOAD_RATE_WINDOW_MS is cut (408) and what it stored is removed. 0: off.
  UPLOAD_MIN_BYTES_PER_SEC: int(8_192, 0),
  UPLOAD_RATE_WINDOW_MS: int(30_000, 100, 600_000),
  METRICS_ENABLED: bool(true),
  // GET /media/... (public, unauthenticated): requests per minute per client address.
  MEDIA_RATE_LIMIT_PER_MIN: int(600, 1),
  // /metrics is served on its own port, on loopback by default, never on the public API port.
  API_METRICS_PORT: int(9464, 0, 65535),
  METRICS_HOST: z.string().default('127.0.0.1'),
  // Gateway: one full garbage collection after this long without requests (0 = never), so memory
  // a burst left behind goes back to the system.
  IDLE_GC_AFTER_MS: int(10_000, 0),

  // Tracing (shared/tracing.ts): spans go over OTLP/HTTP (protobuf) to this base URL
  // (`<url>/v1/traces`, e.g. http://127.0.0.1:4318). Unset: tracing is off and nothing of the
  // OpenTelemetry SDK is loaded. OTEL_SERVICE_NAME overrides the process's name (mediagen-api,
  // mediagen-worker).
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalString.pipe(url.optional()),
  OTEL_SERVICE_NAME: optionalString,
  // An inbound `traceparent` becomes the parent of the request's span only when set (a trusted
  // proxy in front); otherwise the request starts its own trace with a link to the caller's span.
  TRACE_TRUST_INBOUND: bool(false),

  // Workers
  WORKER_ROLES: optionalString,
  WORKER_SHUTDOWN_GRACE_MS: int(30_000, 0),
  // Unset: no metrics server. A port serves /metrics on HOST; 0 takes a free one (logged at start).
  WORKER_METRICS_PORT: optionalInt(0, 65535),
  WORKFLOW_BUNDLE_PATH: optionalString,
  // Worker Versioning (worker/deployment.ts): every fleet of one build polls as one version of this
  // deployment, so a job runs to the end on the build that started it. Unset: unversioned workers
  // (the test suites' in-process fleets). WORKER_BUILD_ID defaults to the build's content hash
  // (dist/build-id, written by npm run build). WORKER_DEPLOYMENT_PROMOTE: at start, make this build
  // the current version `newer` (once it polls every queue, only a build never current before and
  // newer than the current one: rainbow deploys), `first` (only when the deployment has none),
  // `always` (`npm run dev`, which replaces every process at once) or `never` (an operator
  // promotes it: admin `deployment promote`).
  WORKER_DEPLOYMENT_NAME: optionalString.pipe(z.string().regex(/^[A-Za-z0-9_-]{1,100}$/, 'letters, digits, "_" and "-" only').optional()),
  WORKER_BUILD_ID: optionalString,
  WORKER_DEPLOYMENT_PROMOTE: z.enum(['newer', 'first', 'always', 'never']).default('newer'),
  // A versioned worker whose build the server reports drained (superseded, no job pinned to it
  // left) stops by itself, checked this often; 0 keeps it running (an operator retires it).
  WORKER_DRAIN_CHECK_MS: int(30_000, 0),
  // Every generation run's workflowRunTimeout is the model's deadline plus this: the time storing
  // outputs may run past the deadline (20 min), the provider-cancel bound (5 min) and a margin. A
  // run no worker serves (its build's workers gone) ends then and the reconciler refunds it.
  JOB_RUN_TIMEOUT_GRACE_MS: int(30 * 60_000, 1_000),
  // The reconciler role's mediagen_workflows_without_pollers gauge: a build counts as polled while
  // one of its workers polled the workflows queue within this long (longer than a long poll, 60 s).
  VERSION_POLLERS_FRESH_MS: int(90_000, 1_000),
  RECONCILE_INTERVAL_MS: int(15_000, 200),
  // Reconciler (worker/reconciler.ts): workflow starts and settlements it runs at once per replica,
  // and how long a replica's claim on a job keeps the others off it (a replica that dies mid-pass
  // leaves claims that expire after this).
  RECONCILE_CONCURRENCY: int(16, 1, 1_000),
  RECONCILE_LEASE_MS: int(60_000, 1_000),
  // A job in flight whose row has not been written for this long is checked against its workflow
  // (a final write lost with a database crash is repaired); each such row at most once per period.
  RECONCILE_STALE_AFTER_MS: int(600_000, 1_000),
  WORKFLOW_TASK_CONCURRENCY: int(100, 1),
  // A provider poll stores the job's percent / queue position at most this often per job.
  PROGRESS_WRITE_INTERVAL_MS: int(2_000, 0, 60_000),
  IO_ACTIVITY_CONCURRENCY: int(50, 1),
  // Per provider fleet: at most this many provider activities at once on one worker, and at most
  // this many per second across every worker of the queue (server-enforced), e.g. "fal=8,local=2".
  PROVIDER_CONCURRENCY: optionalString,
  PROVIDER_RATE_PER_SECOND: optionalString,

  // Remote fetching (upload-from-url and job inputs given as URLs)
  FETCH_CONNECT_TIMEOUT_MS: int(5_000, 100),
  FETCH_TOTAL_TIMEOUT_MS: int(60_000, 100),
  // A transfer slower than FETCH_MIN_BYTES_PER_SECOND, averaged over each FETCH_MIN_RATE_WINDOW_MS,
  // is aborted: a slow server cannot hold a fetch slot for the whole total timeout.
  FETCH_MIN_BYTES_PER_SECOND: int(16 * 1024, 0),
  FETCH_MIN_RATE_WINDOW_MS: int(10_000, 100),
  // Remote fetches run on their own task queue (<prefix>-fetch): this many at once per worker, and
  // at most FETCH_PER_WORKSPACE_CONCURRENCY of one workspace's fetches in flight across the fleet.
  FETCH_ACTIVITY_CONCURRENCY: int(20, 1),
  FETCH_PER_WORKSPACE_CONCURRENCY: int(4, 1),
  // Test-only escape hatch: one loopback https origin (e.g. https://127.0.0.1:8443) that the SSRF
  // guard lets through. Off by default; it is read from the process environment only.
  FETCH_ALLOW_LOOPBACK_ORIGIN: optionalString,
  FETCH_EXTRA_CA_FILE: optionalString,

  // Webhooks (activities/webhooks.ts): each delivery attempt has WEBHOOK_TIMEOUT_MS; failed attempts
  // are retried with exponential backoff from WEBHOOK_RETRY_INITIAL_MS up to
  // WEBHOOK_RETRY_MAX_INTERVAL_MS apart, for WEBHOOK_RETRY_FOR_MS in all (a day).
  WEBHOOK_TIMEOUT_MS: int(10_000, 100, 60_000),
  WEBHOOK_RETRY_INITIAL_MS: int(5_000, 10),
  WEBHOOK_RETRY_MAX_INTERVAL_MS: int(3_600_000, 10),
  WEBHOOK_RETRY_FOR_MS: int(86_400_000, 1_000),
  // Deliveries run on their own queue (<prefix>-webhooks, the `webhooks` role): this many attempts at
  // once per worker; at most WEBHOOK_WORKSPACE_CONCURRENCY of one workspace's events in flight across
  // the fleet (the rest wait in the outbox, in order).
  WEBHOOK_ACTIVITY_CONCURRENCY: int(50, 1),
  WEBHOOK_WORKSPACE_CONCURRENCY: int(10, 1),
  // Circuit breaker per (workspace, destination), counting connection errors, timeouts and 5xx
  // (shared/webhook-circuit.ts): it opens after at least WEBHOOK_BREAKER_FAILURES failures and
  // WEBHOOK_BREAKER_SPAN_MS without a success; attempts then wait WEBHOOK_BREAKER_COOLDOWN_MS (not
  // counted as retries), then WEBHOOK_BREAKER_TRIALS trials go out and the first success closes it.
  WEBHOOK_BREAKER_FAILURES: int(10, 1),
  WEBHOOK_BREAKER_SPAN_MS: int(30_000, 0),
  WEBHOOK_BREAKER_COOLDOWN_MS: int(60_000, 10),
  WEBHOOK_BREAKER_TRIALS: int(3, 1),
  // Finished events (delivered, given up or superseded) are removed from the outbox after this many days.
  WEBHOOK_OUTBOX_RETENTION_DAYS: int(7, 1, 3650),
  // Key material for the at-rest encryption of webhook signing secrets. Required in production by the
  // processes that read it (the webhooks role, the admin CLI); in development and tests it defaults
  // to S3_SECRET_KEY.
  WEBHOOK_SECRETS_KEY: optionalString,
  // Test-only: webhook targets on loopback (http or https, any port) pass the SSRF guard.
  WEBHOOK_ALLOW_LOOPBACK: bool(false),

  // Providers: a route is live only when its key is present and PROVIDERS_MODE is not "local".
  PROVIDERS_MODE: z.enum(['local', 'live', 'auto']).default('local'),
  // Production refuses to serve (and charge for) placeholder media from the local renderer, by
  // PROVIDERS_MODE=local or by auto's fallback, unless this says it is on purpose (a demo, the prod profile).
  ALLOW_PLACEHOLDER_PROVIDERS: bool(false),
  // Names (never values) of the provider key variables set on this deployment's provider fleets,
  // comma-separated: a process that routes jobs but calls no provider (a gateway) holds no key.
  PROVIDER_KEYS_SET: optionalString,
  // Each provider's keys and settings (FAL_*, OPENAI_*, …), declared with the provider (shared/providers/<name>.ts).
  ...providerConfigSchema,
  // Failover (README "Provider failover"): a job whose provider fails in a way another provider can
  // fix moves to the model's next live route. PROVIDER_FAILOVER=false keeps every job on its first
  // route. PROVIDER_ROUTES overrides the catalog's route order per model, `model=provider,provider`
  // separated by `;` (one provider listed: no failover for that model). A provider step gives its
  // route up when the provider stayed unreachable (5xx, timeouts) for PROVIDER_FAILOVER_BUDGET_MS and
  // a route remains; a request the provider last reported running is never given up (its deadline ends it).
  PROVIDER_FAILOVER: bool(true),
  PROVIDER_ROUTES: optionalString,
  PROVIDER_FAILOVER_BUDGET_MS: int(300_000, 100, 3_600_000),
  // The circuit breaker per provider and model, shared by the fleet through Postgres: it opens when
  // at least PROVIDER_BREAKER_MIN_ATTEMPTS route attempts ended within PROVIDER_BREAKER_WINDOW_MS and
  // PROVIDER_BREAKER_FAILURE_PERCENT of them failed over; new jobs then skip the route for
  // PROVIDER_BREAKER_OPEN_MS, after which one trial job goes through (half-open); a trial that has
  // not ended after PROVIDER_BREAKER_TRIAL_MS (minutes-long video jobs) lets the next one through.
  PROVIDER_BREAKER_WINDOW_MS: int(300_000, 1_000),
  PROVIDER_BREAKER_MIN_ATTEMPTS: int(5, 1),
  PROVIDER_BREAKER_FAILURE_PERCENT: int(50, 1, 100),
  PROVIDER_BREAKER_OPEN_MS: int(60_000, 100),
  PROVIDER_BREAKER_TRIAL_MS: int(900_000, 100),
  // Provider outputs are fetched through the guarded fetcher from each provider's own hosts only;
  // the operator's extra host patterns per provider (`google=a.example.com;byteplus=*.cdn.example.net`;
  // a bare comma-separated list applies to every provider), a size cap and a timeout.
  PROVIDER_OUTPUT_HOSTS: optionalString,
  PROVIDER_OUTPUT_MAX_MB: int(1024, 1, 10_240),
  PROVIDER_OUTPUT_TIMEOUT_MS: int(900_000, 1000, 3_600_000),

  // Local renderer
  LOCAL_RENDER_LATENCY_MS: int(0, 0, 600_000),
  // Opt-in fault injection for tests: prompts/scripts containing the marker fail as said.
  LOCAL_RENDER_FAULTS: bool(false),
  FFMPEG_PATH: z.string().default('ffmpeg'),
  FFPROBE_PATH: z.string().default('ffprobe'),
  // Caps of every ffmpeg/ffprobe run on a tenant's file (activities/providers/media-tools.ts): frame
  // size and length of videos (longer or larger ones fail the job), threads per run, and the address
  // space of each tool process through util-linux prlimit (0 = uncapped).
  MEDIA_INPUT_MAX_VIDEO_PIXELS: int(4096 * 4096, 1),
  MEDIA_INPUT_MAX_SECONDS: int(600, 1, 86_400),
  MEDIA_TOOL_THREADS: int(2, 1, 64),
  MEDIA_TOOL_MEMORY_MB: int(1536, 0, 1_048_576),
  PRLIMIT_PATH: z.string().default('prlimit'),
  ESPEAK_PATH: z.string().default('espeak-ng'),
});

export type Config = z.infer<typeof envSchema>;

/**
 * Switches that exist for tests only: each opens a hole (a loopback origin past the SSRF guard,
 * failures or delays injected on request) that a production process must never run with.
 */
export const testOnlySettings: ReadonlyArray<{ name: keyof Config; active: (c: Config) => boolean }> = [
  { name: 'FETCH_ALLOW_LOOPBACK_ORIGIN', active: (c) => c.FETCH_ALLOW_LOOPBACK_ORIGIN !== undefined },
  { name: 'LOCAL_RENDER_FAULTS', active: (c) => c.LOCAL_RENDER_FAULTS },
  { name: 'LOCAL_RENDER_LATENCY_MS', active: (c) => c.LOCAL_RENDER_LATENCY_MS > 0 },
  { name: 'WEBHOOK_ALLOW_LOOPBACK', active: (c) => c.WEBHOOK_ALLOW_LOOPBACK },
];

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parse the environment once; the message names each bad variable and why, never its value. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  try {
    parseRouteOrder(parsed.data.PROVIDER_ROUTES);
  } catch (err) {
    throw new ConfigError(`invalid configuration:\n  ${(err as Error).message}`);
  }
  if (parsed.data.UPLOAD_RETENTION_SECONDS > parsed.data.UPLOAD_MAX_RETENTION_SECONDS) {
    throw new ConfigError('invalid configuration:\n  UPLOAD_RETENTION_SECONDS: must not exceed UPLOAD_MAX_RETENTION_SECONDS');
  }
  if (parsed.data.NODE_ENV === 'production') {
    const refused = testOnlySettings.filter((s) => s.active(parsed.data)).map((s) => `  ${s.name}: test-only setting, refused when NODE_ENV=production`);
    // Its own key: falling back to the storage secret would tie the two secrets' rotations together
    // and put both in one place. Whether a process needs it at all depends on its roles
    // (shared/routing.ts missingRoleSecrets).
    if (parsed.data.WEBHOOK_SECRETS_KEY && parsed.data.WEBHOOK_SECRETS_KEY === parsed.data.S3_SECRET_KEY) refused.push('  WEBHOOK_SECRETS_KEY: must differ from S3_SECRET_KEY when NODE_ENV=production');
    if (!parsed.data.ALLOW_PLACEHOLDER_PROVIDERS) {
      const placeholders = localRenderedModels(parsed.data);
      if (parsed.data.PROVIDERS_MODE === 'local') {
        refused.push('  PROVIDERS_MODE: local serves every model from the local renderer (placeholder media, charged as real) and is refused when NODE_ENV=production unless ALLOW_PLACEHOLDER_PROVIDERS=1');
      } else if (placeholders.length > 0) {
        refused.push(`  PROVIDERS_MODE: auto would serve ${placeholders.join(', ')} from the local renderer (placeholder media; their provider keys are not set), refused when NODE_ENV=production unless ALLOW_PLACEHOLDER_PROVIDERS=1`);
      }
    }
    if (refused.length > 0) throw new ConfigError(`invalid configuration:\n${refused.join('\n')}`);
  }
  return parsed.data;
}

/** Every variable the service reads, for docs and the docker-compose check. */
export const configVariables = Object.keys(envSchema.shape);
