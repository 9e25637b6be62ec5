// Webhook delivery: the activity of the webhooks queue that POSTs one signed event (see
// workflows/webhook-delivery.ts for the retries, shared/webhooks/target.ts for the URL rules,
// shared/webhooks/signing.ts for the signature), and the payload built from the job as the event's
// transaction left it.
//
// What keeps one workspace's receivers from hurting the others: each workspace has its own circuit
// breaker per destination (URL host and port), shared by the fleet (shared/webhooks/circuit.ts,
// db/repos/webhooks.ts), so a workspace whose requests fail at a shared host opens only its own
// circuit there. Only connection errors, timeouts and 5xx count against a destination; a 4xx is
// the receiver's answer about that event (retried, not counted). While a circuit is open an attempt
// is not made and not counted: the activity answers how long to wait and the workflow waits on a
// timer. The dispatcher (worker/webhook-dispatcher.ts) keeps at most WEBHOOK_WORKSPACE_CONCURRENCY
// of a workspace's events in flight. A `job.generating` event not yet delivered when its job was
// canceled by its customer is not sent (superseded: the `job.failed` event says it all), so a
// create-then-cancel loop costs one delivery per job, and the cap bounds how many are under way.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Logger } from 'pino';
import type { Database } from '../db/index.js';
import type { Job, WebhookDelivery } from '../db/schema.js';
import * as webhooksRepo from '../db/repos/webhooks.js';
import { endpointSigningSecrets } from '../db/repos/webhook-endpoints.js';
import type { Config } from '../shared/config.js';
import { FetchError, type Resolver } from '../shared/fetch-remote.js';
import { postWebhook, resolveWebhookTarget } from '../shared/webhooks/target.js';
import { secretsDecryptionKeys, signWebhook } from '../shared/webhooks/signing.js';
import { jobFromSnapshot as jobFromSnapshotOf, presentJob } from '../shared/job-record.js';
import type { WebhookActivities, WebhookAttemptResult } from '../workflows/activity-types.js';
import { outcomeOfStatus, type CircuitPolicy } from '../shared/webhooks/circuit.js';
import * as attemptsRepo from '../db/repos/webhook-deliveries.js';
import { errorClassOfStatus, nextRetryAt, type AttemptErrorClass } from '../shared/webhooks/attempts.js';

/** Failure types of the delivery activity; only WebhookUndelivered is retried. */
export const webhookFailureTypes = {
  undelivered: 'WebhookUndelivered',
  refused: 'WebhookRefused',
  gone: 'WebhookGone',
} as const;

// ------------------------------------------------------------------ payload

/** The job row the trigger stored (to_jsonb) back as a Job, for the same presenter GET uses. */
export const jobFromSnapshot = (snapshot: Record<string, unknown>): Job => jobFromSnapshotOf<Job>(snapshot);

/**
 * `{ type, data }`: data is the job record GET answered at the moment of the event; an event that
 * is not a job's (a budget's, db/repos/budgets.ts) stored its data as it is sent.
 */
export function webhookBody(delivery: Pick<WebhookDelivery, 'type' | 'job'> & { job_id?: string | null }): string {
  if (delivery.job_id === null) return JSON.stringify({ type: delivery.type, data: delivery.job });
  const job = jobFromSnapshot(delivery.job);
  return JSON.stringify({ type: delivery.type, data: presentJob(job) });
}

// ------------------------------------------------------------------ activities (webhooks queue)

export interface WebhookActivityDeps {
  db: Database;
  config: Pick<
    Config,
    | 'WEBHOOK_ALLOW_LOOPBACK'
    | 'WEBHOOK_TIMEOUT_MS'
    | 'WEBHOOK_SECRETS_KEY'
    | 'S3_SECRET_KEY'
    | 'WEBHOOK_BREAKER_FAILURES'
    | 'WEBHOOK_BREAKER_SPAN_MS'
    | 'WEBHOOK_BREAKER_COOLDOWN_MS'
    | 'WEBHOOK_BREAKER_TRIALS'
    | 'WEBHOOK_RETRY_INITIAL_MS'
    | 'WEBHOOK_RETRY_MAX_INTERVAL_MS'
    | 'WEBHOOK_RETRY_MAX_ATTEMPTS'
  >;
  /** Tests inject a resolver so hostile answers are refused without any connection. */
  resolver?: Resolver;
  logger?: Logger;
  /** Each attempt's outcome (`delivered` or its error class) and, when a request went out, its latency. */
  metrics?: { webhookAttempt(outcome: string, seconds: number | null): void };
}

/** The destination a circuit is kept for (with the workspace): the receiver's host (with a non-default port); an unparsable URL is its own key. */
function destinationOf(url: string): string {
  try {
    return new URL(url).host.toLowerCase();
  } catch {
    return url.slice(0, 200);
  }
}

const shortError = (message: string) => message.slice(0, 300);

export function createWebhookActivities(deps: WebhookActivityDeps): WebhookActivities {
  const { db, config } = deps;
  const key = secretsDecryptionKeys(config);
  const breaker = circuitPolicy(config);

  /**
   * The secrets a delivery is signed with: its endpoint's (0110_webhook_endpoints) or, for a
   * per-request URL, the workspace's. A delivery whose endpoint was deleted or disabled since the
   * event is not sent ('superseded').
   */
  const signingFor = async (delivery: WebhookDelivery): Promise<{ secrets: string[]; undecryptable: string[] } | 'superseded'> => {
    if (delivery.endpoint_id === null) return webhooksRepo.signingSecrets(db, delivery.workspace_id, key);
    const s = await endpointSigningSecrets(db, delivery.endpoint_id, key);
    return s.state === 'enabled' ? s : 'superseded';
  };

  return {
    /**
     * One delivery attempt of one event: sign with every active secret of its endpoint (or, for a
     * per-request URL, of the workspace), POST, and
     * record the outcome. 2xx = delivered; anything else throws and the workflow's retry policy
     * tries again later with the same webhook-id. While the destination's circuit is open nothing
     * is sent and nothing recorded: the answer's `circuitWaitMs` says how long to wait.
     */
    async deliverWebhook(deliveryId: string): Promise<WebhookAttemptResult> {
      const info = Context.current().info;
      const attempt = info.attempt;
      const delivery = await webhooksRepo.getDelivery(db, deliveryId);
      if (!delivery)
        throw ApplicationFailure.create({ type: webhookFailureTypes.gone, message: `webhook event ${deliveryId} does not exist`, nonRetryable: true });
      if (delivery.delivered_at) return { status: delivery.last_status ?? 200, attempt };
      if (delivery.superseded_at) return { status: 0, attempt, superseded: true };
      // A redelivery was asked for by the customer: it is sent even when a later event made it moot.
      if (delivery.type === 'job.generating' && delivery.redeliveries === 0 && (await webhooksRepo.canceledLater(db, delivery))) {
        await webhooksRepo.markSuperseded(db, deliveryId);
        return { status: 0, attempt, superseded: true };
      }
      // The customer's record of this attempt (webhook_attempts), keyed by the activity attempt, so a
      // repeated write records it once; started just before the request goes out (or at a failure
      // before it), so an attempt cut short by its timeout or its worker's death still shows.
      const runKey = `${info.workflowExecution?.workflowId ?? deliveryId}/${info.workflowExecution?.runId ?? ''}`;
      const attemptKey = `${runKey}/${info.activityId}/${attempt}`;
      let started: { number: number; ofRun: number } | null = null;
      const begin = async () => (started ??= await attemptsRepo.startAttempt(db, deliveryId, runKey, attemptKey));
      const finish = async (statusCode: number | null, errorClass: AttemptErrorClass | null, latencyMs: number | null, retry: boolean) => {
        const { ofRun } = await begin();
        const maxAttempts = config.WEBHOOK_RETRY_MAX_ATTEMPTS;
        // Temporal gives up when the next retry would pass the activity's schedule-to-close deadline.
        const giveUpAt = info.scheduleToCloseTimeoutMs > 0 ? info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs : null;
        const policy = { initialMs: config.WEBHOOK_RETRY_INITIAL_MS, maxIntervalMs: config.WEBHOOK_RETRY_MAX_INTERVAL_MS };
        const next = retry && !(maxAttempts > 0 && ofRun >= maxAttempts) ? nextRetryAt(Date.now(), ofRun, policy, giveUpAt) : null;
        await attemptsRepo.finishAttempt(db, deliveryId, attemptKey, { statusCode, errorClass, latencyMs, nextRetryAt: next });
        deps.metrics?.webhookAttempt(errorClass ?? 'delivered', latencyMs === null ? null : latencyMs / 1000);
      };
      // The attempt number rides on the failure, so the workflow counts attempts across activity runs.
      let counted = false;
      const fail = async (
        status: number | null,
        message: string,
        retry: boolean,
        errorClass: AttemptErrorClass,
        latencyMs: number | null = null,
      ): Promise<never> => {
        await finish(status, errorClass, latencyMs, retry);
        await webhooksRepo.recordAttempt(db, deliveryId, { status, error: shortError(message), delivered: false, counted });
        throw ApplicationFailure.create({
          type: retry ? webhookFailureTypes.undelivered : webhookFailureTypes.refused,
          message,
          nonRetryable: !retry,
          details: [{ attempt }],
        });
      };

      const signing = await signingFor(delivery);
      if (signing === 'superseded') {
        await webhooksRepo.markSuperseded(db, deliveryId);
        return { status: 0, attempt, superseded: true };
      }
      const { secrets, undecryptable } = signing;
      if (undecryptable.length > 0)
        deps.logger?.warn({ workspaceId: delivery.workspace_id, secretIds: undecryptable }, 'webhook secrets that cannot be decrypted were skipped');
      if (secrets.length === 0)
        return fail(null, 'the workspace has no webhook signing secret that can be used (an owner creates one: webhook secret rotate)', true, 'no_secret');
      let target: Awaited<ReturnType<typeof resolveWebhookTarget>>;
      try {
        // A name that does not resolve now is retried, and says nothing about the destination's health.
        target = await resolveWebhookTarget(delivery.url, { allowLoopback: config.WEBHOOK_ALLOW_LOOPBACK, resolver: deps.resolver });
      } catch (err) {
        if (err instanceof FetchError) return fail(null, `webhook URL refused: ${err.message}`, err.kind === 'unavailable', 'refused');
        throw err;
      }
      const circuit = { workspaceId: delivery.workspace_id, destination: destinationOf(delivery.url) };
      const admission = await webhooksRepo.admitToCircuit(db, circuit, breaker);
      if (!admission.admitted) {
        // Spread the waiters so they do not all come back in the same instant.
        const circuitWaitMs = Math.ceil(admission.waitMs + Math.random() * Math.min(1_000, admission.waitMs / 10));
        await attemptsRepo.markCircuitWait(db, deliveryId, new Date(Date.now() + circuitWaitMs));
        return { status: 0, attempt, circuitWaitMs };
      }
      const body = webhookBody(delivery);
      // webhook-id is the event's id: the same from every endpoint and the per-request URL.
      const headers = signWebhook(secrets, delivery.event_id, Math.floor(Date.now() / 1000), body);
      await webhooksRepo.countAttempt(db, deliveryId);
      counted = true;
      await begin();
      const sentAt = performance.now();
      const latency = () => Math.round(performance.now() - sentAt);
      let status: number;
      try {
        status = await postWebhook(target, { ...headers }, body, config.WEBHOOK_TIMEOUT_MS);
      } catch (err) {
        const ms = latency();
        await webhooksRepo.recordCircuitOutcome(db, circuit, 'failure', admission.trial, breaker);
        // shared/webhooks/target.ts postWebhook: a timeout says "no answer within", anything else is the connection.
        const errorClass = (err as Error).message.startsWith('no answer within') ? 'timeout' : 'connection';
        return fail(null, `webhook not delivered: ${(err as Error).message}`, true, errorClass, ms);
      }
      const ms = latency();
      await webhooksRepo.recordCircuitOutcome(db, circuit, outcomeOfStatus(status), admission.trial, breaker);
      const errorClass = errorClassOfStatus(status);
      if (errorClass) return fail(status, `webhook not delivered: the receiver answered ${status}`, true, errorClass, ms);
      await finish(status, null, ms, false);
      await webhooksRepo.recordAttempt(db, deliveryId, { status, error: null, delivered: true, counted });
      return { status, attempt };
    },

    /** Retries ran out (about a day): the event is given up, and says so, with the attempts its workflow made. */
    async abandonWebhook(deliveryId: string, message: string, attempts?: number): Promise<void> {
      await webhooksRepo.markDeliveryFailed(db, deliveryId, shortError(message), attempts ?? 0);
    },
  };
}

/** The breaker's parameters from the config; a trial has one attempt's time (the POST and a margin). */
export function circuitPolicy(
  config: Pick<
    Config,
    'WEBHOOK_TIMEOUT_MS' | 'WEBHOOK_BREAKER_FAILURES' | 'WEBHOOK_BREAKER_SPAN_MS' | 'WEBHOOK_BREAKER_COOLDOWN_MS' | 'WEBHOOK_BREAKER_TRIALS'
  >,
): CircuitPolicy {
  return {
    failures: config.WEBHOOK_BREAKER_FAILURES,
    spanMs: config.WEBHOOK_BREAKER_SPAN_MS,
    cooldownMs: config.WEBHOOK_BREAKER_COOLDOWN_MS,
    trials: config.WEBHOOK_BREAKER_TRIALS,
    trialTimeoutMs: config.WEBHOOK_TIMEOUT_MS + 5_000,
  };
}

export type { WebhookActivities } from '../workflows/activity-types.js';
