// What keeps one workspace's webhooks from hurting the others, on the real Postgres (and the real
// Temporal for the dispatcher), with the delivery activity run as an activity
// (MockActivityEnvironment) against receivers on 127.0.0.1:
//   - a receiver that keeps failing (5xx) opens its workspace's circuit for that destination:
//     attempts then wait without a connection and without counting as attempts, while another
//     workspace's attempts to the same destination go out; 404s never open it; after the cooldown
//     trials go out and a success closes it;
//   - a `job.generating` event not yet delivered when its job was canceled is superseded, never sent;
//   - a secret that cannot be decrypted is skipped: the workspace's other secret still signs;
//   - the dispatcher keeps at most WEBHOOK_WORKSPACE_CONCURRENCY events of a workspace in flight,
//     and dispatches the next as one finishes; other workspaces are dispatched at once;
//   - finished events past their retention are removed; events still in flight are kept.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Client, Connection } from '@temporalio/client';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { createTenant, createTestDatabase, insertImageJob, testConfig, type Tenant, type TestDatabase } from '../support/stack.js';
// The job service's status moves, in a transaction of the test's own.
import * as jobMoves from '../../jobs/index.js';
import * as webhooksRepo from '../../db/repos/webhooks.js';
import { createWebhookActivities } from '../../activities/webhooks.js';
import { createWebhookDispatcher } from '../../worker/webhook-dispatcher.js';
import { encryptSecret, generateWebhookSecret, secretsEncryptionKey } from '../../shared/webhooks/signing.js';
import type { Config } from '../../shared/config.js';
import type { Tx } from '../../db/index.js';
import { parseRoles, roleName } from '../../worker/roles.js';
import { createWorkerMetrics } from '../../worker/metrics.js';
import { alertRule, evaluateAlert } from '../support/ops.js';
import { taskQueues } from '../../workflows/definitions.js';
import type { WebhookAttemptResult } from '../../workflows/activity-types.js';
import { codecDataConverter } from '../../codec/payload-codec.js';

let tdb: TestDatabase;
let config: Config;
let receiver: { server: Server; base: string; hits: string[]; status: number; statusOf: Map<string, number> };

before(async () => {
  tdb = await createTestDatabase();
  config = testConfig(tdb.url, {
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    WEBHOOK_TIMEOUT_MS: '1000',
    WEBHOOK_BREAKER_FAILURES: '3',
    WEBHOOK_BREAKER_SPAN_MS: '1000',
    WEBHOOK_BREAKER_COOLDOWN_MS: '3000',
    WEBHOOK_BREAKER_TRIALS: '2',
    WEBHOOK_WORKSPACE_CONCURRENCY: '2',
    WEBHOOK_SECRETS_KEY: 'webhook-isolation-test-key',
  });
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? '/');
    req.resume();
    req.on('end', () => res.writeHead(receiver.statusOf.get(req.url ?? '/') ?? receiver.status).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  receiver = { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, status: 204, statusOf: new Map() };
});

after(async () => {
  receiver?.server.closeAllConnections();
  await new Promise((r) => receiver?.server.close(r));
  await tdb?.drop();
});

const key = () => secretsEncryptionKey(config);
const tx = <T>(fn: (x: Tx) => Promise<T>) => tdb.db.transaction().execute(fn);

async function addSecret(t: Tenant, encrypted?: string): Promise<string> {
  const id = `whs_${Math.random().toString(36).slice(2)}`;
  const secret = generateWebhookSecret();
  await tdb.db
    .insertInto('webhook_secrets')
    .values({ id, workspace_id: t.workspaceId, secret_encrypted: encrypted ?? encryptSecret(key(), secret, id, t.workspaceId), created_by: t.ownerEmail })
    .execute();
  return secret;
}

/** A job whose webhook asks for every event, moved to `generating` then `failed`: two outbox rows. */
async function jobWithEvents(t: Tenant, url: string, moves: Array<'generating' | 'failed'>): Promise<string[]> {
  const job = await insertImageJob(tdb.db, t);
  await tdb.db
    .updateTable('jobs')
    .set({ webhook_url: url, webhook_events: ['generating', 'completed', 'failed'] })
    .where('id', '=', job.id)
    .execute();
  for (const m of moves) {
    if (m === 'generating') await tx((x) => jobMoves.claimJob(x, job.id, 'run-1'));
    else await tx((x) => jobMoves.failJob(x, job.id, { code: 'canceled', message: 'canceled' }, 'run-1'));
  }
  return (await webhooksRepo.deliveriesOfJob(tdb.db, job.id)).map((d) => d.id);
}

function deliver(id: string): Promise<WebhookAttemptResult> {
  const acts = createWebhookActivities({ db: tdb.db, config, logger: pino({ level: 'silent' }) });
  return new MockActivityEnvironment().run(acts.deliverWebhook, id) as Promise<WebhookAttemptResult>;
}

test('deliveries have their own task queue and fleet role', () => {
  assert.equal(taskQueues('media').webhooks, 'media-webhooks');
  assert.deepEqual(parseRoles('webhooks').map(roleName), ['webhooks']);
  assert.ok(parseRoles('all').map(roleName).includes('webhooks'));
});

describe('delivery attempts', () => {
  test("a receiver that keeps failing opens its workspace's circuit: attempts wait, uncounted and unsent, while another workspace's go out; after the cooldown a trial closes it", async () => {
    const [a, b] = [await createTenant(tdb.db), await createTenant(tdb.db)];
    await addSecret(a);
    await addSecret(b);
    const [pathA, pathB] = ['/circuit-a', '/circuit-b'];
    receiver.statusOf.set(pathA, 500);
    const idsA = await Promise.all(
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(() => jobWithEvents(a, `${receiver.base}${pathA}`, ['generating', 'failed']).then((x) => x[1]!)),
    );
    const idB = (await jobWithEvents(b, `${receiver.base}${pathB}`, ['generating', 'failed']))[1]!;
    const circuitA = { workspaceId: a.workspaceId, destination: new URL(receiver.base).host };
    try {
      // Failures 250 ms apart until the circuit opens: it takes at least three, over at least the span.
      let failed = 0;
      while ((await webhooksRepo.getCircuit(tdb.db, circuitA)).state !== 'open') {
        assert.ok(failed < 8, 'the circuit opened');
        await assert.rejects(deliver(idsA[failed++]!), /the receiver answered 500/);
        if ((await webhooksRepo.getCircuit(tdb.db, circuitA)).state !== 'open') await new Promise((r) => setTimeout(r, 250));
      }
      const circuit = await webhooksRepo.getCircuit(tdb.db, circuitA);
      assert.ok(failed >= 3, `opened after ${failed} failures`);
      assert.ok(circuit.lastFailureAt!.getTime() - circuit.failingSince!.getTime() >= 1000, 'not before the span');
      const sent = receiver.hits.filter((h) => h === pathA).length;
      assert.equal(sent, failed);
      const waiting = await deliver(idsA[8]!);
      assert.ok(waiting.circuitWaitMs! > 0 && waiting.circuitWaitMs! <= 3000 + 300, `waits for the cooldown: ${waiting.circuitWaitMs}`);
      assert.equal(receiver.hits.filter((h) => h === pathA).length, sent, 'no connection while the circuit is open');
      assert.equal((await webhooksRepo.getDelivery(tdb.db, idsA[8]!))!.attempts, 0, 'a skipped attempt is not an attempt');
      // The open-circuits gauge names the workspace (and only it).
      const metrics = createWorkerMetrics();
      metrics.setBacklogSource({
        webhooks: async () => ({ pending: 0, oldestAgeSeconds: 0 }),
        taskQueues: async () => [],
        versionsWithoutPollers: async () => [],
        openWebhookCircuits: () => webhooksRepo.openCircuitsByWorkspace(tdb.db, new Date(Date.now() - 60_000)),
      });
      const exposed = (await metrics.registry.metrics()).split('\n').filter((l) => l.startsWith('mediagen_webhook_open_circuits{'));
      assert.deepEqual(exposed, [`mediagen_webhook_open_circuits{workspace_id="${a.workspaceId}"} 1`]);
      // The alert on it names the workspace too.
      const firing = evaluateAlert(alertRule('MediagenWebhookCircuitOpen').expr, exposed.join('\n'));
      assert.deepEqual(
        firing.map((f) => [f.labels.workspace_id, f.value]),
        [[a.workspaceId, 1]],
      );
      // Same host and port, another workspace: its circuit is its own.
      assert.equal((await deliver(idB)).status, 204);
      assert.equal(receiver.hits.filter((h) => h === pathB).length, 1);

      // After the cooldown: two trials go out (both fail), a third waits; then it is open again.
      await new Promise((r) => setTimeout(r, waiting.circuitWaitMs! + 20));
      const round = await Promise.allSettled([deliver(idsA[0]!), deliver(idsA[1]!), deliver(idsA[2]!)]);
      const trials = round.filter((r) => r.status === 'rejected');
      assert.equal(trials.length, 2, 'two trials at once');
      for (const r of trials) assert.match(String((r as PromiseRejectedResult).reason), /answered 500/);
      const third = round.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<WebhookAttemptResult>;
      assert.ok(third.value.circuitWaitMs! > 0, 'the third waits');
      assert.equal((await webhooksRepo.getCircuit(tdb.db, circuitA)).state, 'open', 'every trial failed');
      receiver.statusOf.set(pathA, 204);
      const again = await deliver(idsA[9]!);
      assert.ok(again.circuitWaitMs! > 0);
      await new Promise((r) => setTimeout(r, again.circuitWaitMs! + 20));
      assert.equal((await deliver(idsA[9]!)).status, 204, 'the trial goes out and is delivered');
      assert.equal((await webhooksRepo.getCircuit(tdb.db, circuitA)).state, 'closed');
      assert.equal((await deliver(idsA[8]!)).status, 204);
    } finally {
      receiver.statusOf.delete(pathA);
    }
  });

  test('404s never open the circuit: every attempt goes out and is retried', async () => {
    const t = await createTenant(tdb.db);
    await addSecret(t);
    const path = '/gone';
    receiver.statusOf.set(path, 404);
    try {
      const ids = await Promise.all([1, 2, 3, 4, 5, 6].map(() => jobWithEvents(t, `${receiver.base}${path}`, ['generating', 'failed']).then((x) => x[1]!)));
      for (const id of ids) {
        await assert.rejects(deliver(id), /the receiver answered 404/);
        await new Promise((r) => setTimeout(r, 60));
      }
      assert.equal(receiver.hits.filter((h) => h === path).length, ids.length);
      assert.equal((await webhooksRepo.getCircuit(tdb.db, { workspaceId: t.workspaceId, destination: new URL(receiver.base).host })).state, 'closed');
    } finally {
      receiver.statusOf.delete(path);
    }
  });

  test('a job.generating event not yet delivered when the job was canceled is superseded and never sent', async () => {
    const t = await createTenant(tdb.db);
    await addSecret(t);
    const [generating, failed] = await jobWithEvents(t, `${receiver.base}/superseded`, ['generating', 'failed']);
    const answer = await deliver(generating!);
    assert.equal(answer.superseded, true);
    assert.equal(receiver.hits.filter((h) => h === '/superseded').length, 0);
    assert.ok((await webhooksRepo.getDelivery(tdb.db, generating!))?.superseded_at);
    assert.equal((await deliver(failed!)).status, 204);
    assert.equal(receiver.hits.filter((h) => h === '/superseded').length, 1);
  });

  test('a secret that cannot be decrypted is skipped; the other secret signs', async () => {
    const t = await createTenant(tdb.db);
    const good = await addSecret(t);
    // Newer, and written under another key: undecryptable with this worker's key.
    const otherKey = secretsEncryptionKey({ WEBHOOK_SECRETS_KEY: 'another key' });
    await new Promise((r) => setTimeout(r, 5));
    await addSecret(t, encryptSecret(otherKey, generateWebhookSecret(), 'whs_bad', t.workspaceId));
    const signed: Array<{ headers: Record<string, string>; body: string }> = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        signed.push({ headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString() });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const [, failed] = await jobWithEvents(t, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, ['generating', 'failed']);
      assert.equal((await deliver(failed!)).status, 204);
      assert.equal(signed.length, 1);
      const event = new Webhook(good).verify(signed[0]!.body, signed[0]!.headers) as { type: string };
      assert.equal(event.type, 'job.failed');
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('dispatch and retention', () => {
  test('a workspace has at most WEBHOOK_WORKSPACE_CONCURRENCY events in flight; the next goes as one finishes; others are not held back', async () => {
    const noisy = await createTenant(tdb.db);
    const quiet = await createTenant(tdb.db);
    const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS });
    const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, ...codecDataConverter(config) });
    // Earlier tests' events are not this test's: mark them dispatched.
    await tdb.db.updateTable('webhook_deliveries').set({ dispatched_at: new Date() }).where('dispatched_at', 'is', null).execute();
    const noisyEvents: string[] = [];
    for (let i = 0; i < 5; i++) noisyEvents.push((await jobWithEvents(noisy, `${receiver.base}/noisy`, ['failed']))[0]!);
    const quietEvent = (await jobWithEvents(quiet, `${receiver.base}/quiet`, ['failed']))[0]!;
    const dispatcher = createWebhookDispatcher({ config, db: tdb.db, client, logger: pino({ level: 'silent' }) });
    const dispatched = async (ids: string[]) =>
      (await tdb.db.selectFrom('webhook_deliveries').select('id').where('id', 'in', ids).where('dispatched_at', 'is not', null).execute()).map((r) => r.id);
    try {
      assert.equal(await dispatcher.runOnce(), 3, 'two of the noisy workspace, and the quiet one');
      assert.deepEqual((await dispatched(noisyEvents)).sort(), noisyEvents.slice(0, 2).sort(), 'the oldest two, in order');
      assert.deepEqual(await dispatched([quietEvent]), [quietEvent]);
      assert.equal(await dispatcher.runOnce(), 0, 'nothing more while two are in flight');
      await webhooksRepo.recordAttempt(tdb.db, noisyEvents[0]!, { status: 204, error: null, delivered: true });
      assert.equal(await dispatcher.runOnce(), 1);
      assert.deepEqual((await dispatched(noisyEvents)).sort(), noisyEvents.slice(0, 3).sort());
    } finally {
      for (const id of [...noisyEvents, quietEvent])
        await client.workflow
          .getHandle(id)
          .terminate('test over')
          .catch(() => undefined);
      await connection.close();
    }
  });

  test('finished events past their retention are removed; in-flight and recent ones stay', async () => {
    const t = await createTenant(tdb.db);
    const [oldDelivered, oldInFlight, recentDelivered] = [
      (await jobWithEvents(t, `${receiver.base}/r`, ['failed']))[0]!,
      (await jobWithEvents(t, `${receiver.base}/r`, ['failed']))[0]!,
      (await jobWithEvents(t, `${receiver.base}/r`, ['failed']))[0]!,
    ];
    const longAgo = new Date(Date.now() - 30 * 86_400_000);
    await tdb.db
      .updateTable('webhook_deliveries')
      .set({ created_at: longAgo, dispatched_at: longAgo })
      .where('id', 'in', [oldDelivered, oldInFlight])
      .execute();
    await webhooksRepo.recordAttempt(tdb.db, oldDelivered, { status: 204, error: null, delivered: true });
    await webhooksRepo.recordAttempt(tdb.db, recentDelivered, { status: 204, error: null, delivered: true });
    const removed = await webhooksRepo.sweepFinishedDeliveries(tdb.db, new Date(Date.now() - config.WEBHOOK_OUTBOX_RETENTION_DAYS * 86_400_000));
    assert.ok(removed >= 1);
    assert.equal(await webhooksRepo.getDelivery(tdb.db, oldDelivered), undefined);
    assert.ok(await webhooksRepo.getDelivery(tdb.db, oldInFlight));
    assert.ok(await webhooksRepo.getDelivery(tdb.db, recentDelivered));
  });
});

test('circuits idle for a day are removed, and the gauge leaves out open circuits nobody has moved since a round', async () => {
  const t = await createTenant(tdb.db);
  const longAgo = new Date(Date.now() - 2 * 86_400_000);
  await tdb.db
    .insertInto('webhook_circuits')
    .values([
      { workspace_id: t.workspaceId, destination: 'idle.example.com', state: 'open', open_until: longAgo, updated_at: longAgo },
      { workspace_id: t.workspaceId, destination: 'busy.example.com', state: 'open', open_until: new Date(Date.now() + 60_000) },
    ])
    .execute();
  const open = await webhooksRepo.openCircuitsByWorkspace(tdb.db, new Date(Date.now() - 120_000));
  assert.deepEqual(
    open.filter((o) => o.workspaceId === t.workspaceId),
    [{ workspaceId: t.workspaceId, open: 1 }],
  );
  assert.ok((await webhooksRepo.sweepIdleCircuits(tdb.db, new Date(Date.now() - 86_400_000))) >= 1);
  const left = await tdb.db.selectFrom('webhook_circuits').select('destination').where('workspace_id', '=', t.workspaceId).execute();
  assert.deepEqual(
    left.map((r) => r.destination),
    ['busy.example.com'],
  );
});
