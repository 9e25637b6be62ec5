// The gateway (api/): listening, rate limits, event streams, connection limits and timeouts.
import { z } from 'zod';
import { int, optionalUrl, trustProxy } from './env-types.js';

export const gatewayEnv = {
  HOST: z.string().default('127.0.0.1').meta({ valueType: 'address' }).describe('Address the gateway listens on (and a worker serves WORKER_METRICS_PORT on).'),
  PORT: int(8080, 0, 65535).describe('Port of the public API (0 takes a free one).'),
  PUBLIC_BASE_URL: optionalUrl().describe(
    "Where clients reach the gateway: links to /media and the OpenAPI server URL are built from it, never from a request's Host header. Unset: the listening address (logged as a warning).",
  ),
  RATE_LIMIT_POLL_PER_MIN: int(120, 1).describe('Requests of the `poll` rate class (reads) per minute per API key.'),
  USAGE_STATEMENT_TIMEOUT_MS: int(10_000, 1, 600_000).describe(
    'GET /v1/usage: the statement timeout of one read (SET LOCAL in its own transaction); past it the read is stopped and answers 503 `service_unavailable` with Retry-After.',
  ),
  USAGE_MAX_CONCURRENT_PER_WORKSPACE: int(2, 1, 100).describe(
    'GET /v1/usage: reads of one workspace that may run at once across every gateway (Postgres advisory locks); past it, 429 `rate_limited`.',
  ),
  RATE_LIMIT_GENERATE_PER_MIN: int(30, 1).describe('Requests of the `generate` rate class (creates) per minute per API key.'),
  RATE_LIMIT_REDELIVER_PER_MIN: int(10, 1).describe('Requests of the `redeliver` rate class (webhook redeliveries) per minute per API key.'),
  // Sliding rate-limit window; shorter only in tests, which cannot wait a minute.
  RATE_LIMIT_WINDOW_MS: int(60_000, 1_000, 3_600_000).describe('Length of the sliding rate-limit window; shorter only in tests, which cannot wait a minute.'),
  MEDIA_RATE_LIMIT_PER_MIN: int(600, 1).describe('GET /media/… (public, unauthenticated): requests per minute per client address.'),
  CANCEL_CHURN_LIMIT: int(20, 0).describe(
    'A workspace whose customers canceled more than this many jobs after their submit to a provider within CANCEL_CHURN_WINDOW_MS gets 429 `cancel_churn_limited` on create (0: no limit).',
  ),
  CANCEL_CHURN_WINDOW_MS: int(3_600_000, 1_000, 30 * 24 * 3_600_000).describe('The window CANCEL_CHURN_LIMIT counts cancels in.'),
  PIPELINE_MAX_STEPS: int(8, 1, 32).describe('Steps a pipeline (POST /v1/pipelines) may have; more is refused with 400 `invalid_request`.'),
  PIPELINE_MAX_ACTIVE: int(10, 1).describe(
    "Pipelines created through POST /v1/pipelines a workspace may have pending or running at once (a batch's pipeline items are not counted: their batch bounds them); past it, a create or resume answers 429 `rate_limited` until one ends.",
  ),
  REUSE_PRICE_CREDITS: int(0, 0, 1_000_000).describe(
    "Credits a job answered from an identical earlier request costs (docs/api/reuse.md; at most the model's price): its create charges the model's price, and the difference is refunded when it is answered. Read by the workers that answer it.",
  ),
  BATCH_MAX_ITEMS: int(1_000, 1, 1_000).describe('Items a batch (POST /v1/batches) may have; more is refused with 400 `invalid_request`.'),
  PROGRESS_QUERY_TIMEOUT_MS: int(300, 10, 10_000).describe(
    "How long a status read waits for the running workflow's live progress before answering with the stored one.",
  ),
  WORKFLOW_START_TIMEOUT_MS: int(3_000, 100, 60_000).describe('A create answers even when Temporal is down: past this, the reconciler starts the workflow.'),
  SSE_HEARTBEAT_MS: int(15_000, 10, 600_000).describe(
    'Event streams (GET /v1/{kind}/{id}/events): a `: ping` comment this often keeps proxies from closing a quiet stream; shorter only in tests.',
  ),
  SSE_MAX_STREAMS_PER_KEY: int(20, 1).describe('Open event streams allowed per API key (api/stream-limits.ts).'),
  SSE_MAX_STREAMS_PER_WORKSPACE: int(50, 1).describe('Open event streams allowed per workspace.'),
  SSE_MAX_STREAMS: int(2_000, 1).describe('Open event streams allowed per gateway process.'),
  SSE_DRAIN_TIMEOUT_MS: int(10_000, 10, 600_000).describe('A stream whose client has not read what was written within this long is closed, not buffered.'),
  GATEWAY_MAX_CONNECTIONS: int(10_000, 1).describe('Sockets the gateway holds at once (every client, streams included); past it, new ones are dropped.'),
  GATEWAY_MAX_CONNECTIONS_PER_CLIENT: int(256, 1).describe(
    'Sockets one client address may hold at once; past it, its new ones are dropped. Peers TRUST_PROXY trusts (the load balancer) are exempt: the balancer limits its clients itself.',
  ),
  GATEWAY_HEADERS_TIMEOUT_MS: int(20_000, 100, 600_000).describe("A request's headers must arrive within this long (slowloris)."),
  GATEWAY_REQUEST_TIMEOUT_MS: int(300_000, 1_000, 3_600_000).describe('The whole request must arrive within this long, else 408 and the socket is closed.'),
  GATEWAY_SHUTDOWN_GRACE_MS: int(10_000, 0, 3_600_000).describe(
    'On SIGTERM the gateway stops accepting, ends its event streams and gives the requests in flight this long to finish before it closes their connections. A deploy that must never cut an upload short sets it to GATEWAY_REQUEST_TIMEOUT_MS (the Helm chart does), and the pod grace above it.',
  ),
  GATEWAY_KEEP_ALIVE_TIMEOUT_MS: int(65_000, 1_000, 600_000).describe(
    "An idle keep-alive socket is closed after this long: longer than the load balancer's idle timeout for its upstream connections, so the gateway never closes one the balancer is about to reuse.",
  ),
  TRUST_PROXY: trustProxy.describe(
    'Peers whose X-Forwarded-For is believed (Express `trust proxy`): empty trusts none; a hop count; or addresses, CIDR ranges and range names. The client address it yields keys the /media rate limit and the per-client connection cap. Never `true`: every peer could then forge its address.',
  ),
};
