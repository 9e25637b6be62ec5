// Workers (worker/): roles, shutdown, Worker Versioning, the reconciler and activity concurrency.
import { z } from 'zod';
import { int, optionalInt, optionalString } from './env-types.js';
import { parseRouteSlots } from '../route-slots.js';

export const workersEnv = {
  BATCH_START_PER_SECOND: int(50, 1, 1_000).describe(
    "Items of one batch whose jobs its parent workflow charges and starts per second (workflows/batch-run.ts): a batch's submit never floods the queues; the items of several batches start side by side, each at this rate.",
  ),
  WORKER_ROLES: optionalString
    .meta({ valueType: 'comma-separated roles' })
    .describe(
      'Roles this worker process runs (`workflows`, `io`, `fetch`, `webhooks`, `reconciler`, `provider:<name>`), when `--roles` is not given. Unset: every role (development).',
    ),
  WORKER_SHUTDOWN_GRACE_MS: int(30_000, 0).describe(
    "On SIGTERM, in-flight activities may finish within this long (a provider fleet: at least its providers' own grace).",
  ),
  WORKER_METRICS_PORT: optionalInt(0, 65535).describe(
    "A port serves the worker's /metrics, and its /healthz (liveness) and /readyz (readiness) for Kubernetes' probes, on METRICS_HOST; 0 takes a free one (logged at start). Unset: no metrics server and no health endpoints.",
  ),
  WORKFLOW_BUNDLE_PATH: optionalString.describe("The prebuilt workflow bundle to load (written by `npm run build`). Unset: the build's default path."),
  WORKER_DEPLOYMENT_NAME: optionalString
    .pipe(
      z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,100}$/, 'letters, digits, "_" and "-" only')
        .optional(),
    )
    .meta({ valueType: 'letters, digits, `_` and `-` (1–100)' })
    .describe(
      "Worker Versioning (worker/deployment.ts): every fleet of one build polls as one version of this deployment, so a job runs to the end on the build that started it. Unset: unversioned workers (the test suites' in-process fleets).",
    ),
  WORKER_BUILD_ID: optionalString.describe("This build's version id. Unset: the build's content hash (`dist/build-id`, written by `npm run build`)."),
  WORKER_DEPLOYMENT_PROMOTE: z
    .enum(['newer', 'first', 'always', 'never'])
    .default('newer')
    .describe(
      'At start, make this build the current version: `newer` (once it polls every queue, only a build never current before and newer than the current one: rainbow deploys), `first` (only when the deployment has none), `always` (`npm run dev`, which replaces every process at once) or `never` (an operator promotes it: admin `deployment promote`).',
    ),
  WORKER_DRAIN_CHECK_MS: int(30_000, 0).describe(
    'A versioned worker whose build the server reports drained (superseded, no job pinned to it left) stops by itself, checked this often; 0 keeps it running (an operator retires it).',
  ),
  JOB_RUN_TIMEOUT_GRACE_MS: int(30 * 60_000, 1_000).describe(
    "Every generation run's workflowRunTimeout is JOB_START_WAIT_MS plus the model's deadline plus this: the time storing outputs may run past the deadline (20 min), the provider-cancel bound (5 min) and a margin (keep it at least 25 min). A run no worker serves (its build's workers gone) ends then and the reconciler refunds it.",
  ),
  JOB_START_WAIT_MS: int(60 * 60_000, 1_000).describe(
    'How long a generation run may wait for its first step (its workflow task queued behind a backlog, or no worker polling) and still start: one that starts later fails its job before any provider request, refunded in full. Every run timeout includes it, so a job that started in time has its whole model deadline, counted from its start, and the time to store its outputs before its run timeout.',
  ),
  VERSION_POLLERS_FRESH_MS: int(90_000, 1_000).describe(
    "The reconciler role's `mediagen_workflows_without_pollers` gauge: a build counts as polled while one of its workers polled the workflows queue within this long (longer than a long poll, 60 s).",
  ),
  RECONCILE_INTERVAL_MS: int(15_000, 200).describe('How often the reconciler (worker/reconciler.ts) runs a pass.'),
  ROUTE_PROBE_INTERVAL_MS: int(300_000, 0).describe(
    "How often each provider fleet asks its provider whether every route's model is still served (worker/route-prober.ts: a model get/list call, free), where the provider has such an endpoint; one replica probes a route per period. A route whose model is gone, or whose key is refused, is taken out of rotation until a probe finds it again. 0: no probes.",
  ),
  PIPELINE_STALL_MS: int(600_000, 500).describe(
    "A pipeline whose parent workflow has not moved on this long although it could have (its current step's job ended, or the step has no job yet) gets a new parent run from the reconciler: the old run was terminated or timed out, or is pinned to a build whose workers are gone (it is terminated). A live parent moves on within seconds.",
  ),
  CONTROL_LEASE_TTL_MS: int(15_000, 300, 600_000).describe(
    "The control loops (reconcilers, webhook outbox dispatch, upload sweeps, route probes, the fleet-wide gauges) run in one worker process per deployment, the holder of each loop's lease (worker/control-lease.ts). A holder renews every third of this; one killed or stalled is replaced within this plus a third of it, one stopping cleanly within a third of it. With Worker Versioning, each holder asks the server at most this often whether its build is still current; a superseded build gives its loops up within this plus a third of it.",
  ),
  RECONCILE_CONCURRENCY: int(16, 1, 1_000).describe('Workflow starts and settlements the reconciler runs at once per replica.'),
  RECONCILE_STALE_AFTER_MS: int(600_000, 1_000).describe(
    'A job in flight whose row has not been written for this long is checked against its workflow (a final write lost with a database crash is repaired); each such row at most once per period.',
  ),
  AUDIT_RETENTION_DAYS: int(400, 30, 3650).describe(
    "A workspace's audit events (GET /v1/audit-events) are kept this many days, then the reconciler role's sweep removes them (5,000 per pass, oldest first). Never under 30: the database function the sweep calls spares younger events whatever it is asked.",
  ),
  EVENTS_RETENTION_DAYS: int(30, 1, 3650).describe(
    "A workspace's event log (GET /v1/events, GET /v1/events/stream) keeps each event this many days, then the reconciler role's sweep removes it (5,000 per pass, oldest first); a reader further behind resumes from the oldest event kept.",
  ),
  WORKFLOW_TASK_CONCURRENCY: int(10, 1).describe(
    "Workflow tasks one worker runs at once. Tasks beyond what its CPU and local-activity slots run promptly wait inside the worker, first in first out, where the server's fair dispatch by workspace no longer orders them: keep it small and add workers instead (operations/fair-share.md).",
  ),
  PROGRESS_WRITE_INTERVAL_MS: int(2_000, 0, 60_000).describe("A provider poll stores the job's percent / queue position at most this often per job."),
  IO_ACTIVITY_CONCURRENCY: int(50, 1).describe('Activities of the `io` queue (Postgres and storage steps) one worker runs at once.'),
  PROVIDER_CONCURRENCY: optionalString
    .meta({ valueType: '`provider=n` pairs, comma-separated' })
    .describe('Per provider fleet: at most this many provider activities at once on one worker, e.g. `fal=8,local=2`.'),
  PROVIDER_RATE_PER_SECOND: optionalString
    .meta({ valueType: '`provider=n` pairs, comma-separated' })
    .describe(
      "Per provider fleet: at most this many provider activities per second across every worker of the queue (server-enforced): submits, storing checks and cancels. The status polls of jobs' waits (`awaitProvider`, on the provider's `-waits` queue) keep to the same rate in each worker process (activities/jobs/await.ts), so a fleet of N processes polls at most N times this.",
    ),
  ROUTE_SLOTS: optionalString
    .superRefine((v, ctx) => {
      try {
        parseRouteSlots(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    })
    .meta({ valueType: '`provider=n` or `provider:model=n` pairs, comma-separated' })
    .describe(
      "Requests in flight at the provider at once per route, across the whole fleet (shared/route-slots.ts), e.g. `fal=16,alibaba:replace-actor=1,xai=8`: a job takes a slot of its route just before its submit and holds it until its request there ends. `provider:model` (public model name or the provider's model id) comes before `provider`. When a route is full, or a workspace holds its share (slots × its weight / the weights of the workspaces holding or waiting) while others wait, the submit waits and is retried through the fair task queue. Unset, or a route not named: unlimited. The local renderer has no pool.",
    ),
};
