// The workspace event log on the real stack (gateway over HTTP, workers, Temporal, Postgres):
//   - a webhook receiver that is down for the whole run (its circuit opens) misses every delivery,
//     and every one of them is recovered from GET /v1/events by its id (= webhook-id), none missing
//     or repeated, and the log holds each job's status moves in the order the job made them;
//   - a pipeline's moves (each step done, the pipeline done) and a key budget's threshold alert are
//     logged once each, in the order they happened, under the ids their webhooks carry;
//   - `types` keeps only the types asked for; an unknown type is a 400;
//   - two gateway processes serve one workspace's SSE stream: the first is killed (SIGKILL) mid-way,
//     the client resumes on the second with Last-Event-ID, and gets every event once, ids checked
//     against the log;
//   - the retention sweep removes events past EVENTS_RETENTION_DAYS, and what stays reads gap-free.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { sql } from 'kysely';
import { createTenant, waitFor, type Tenant } from '../support/stack.js';
import { api, startService, waitForJobStatus, type Service } from '../support/services.js';
import { openEventStream, type SseEvent } from '../support/sse.js';
import { imageStep, videoStep } from '../support/pipeline-steps.js';
import { spawnGateway } from '../integration/gateway-harness.js';
import { getCircuit, rotateWebhookSecret } from '../../db/repos/webhooks.js';
import { lastWorkspaceSeq, sweepWorkspaceEvents } from '../../db/repos/workspace-events.js';
import { secretsEncryptionKey } from '../../shared/webhooks/signing.js';

let svc: Service;
let deadUrl: string;

before(async () => {
  svc = await startService({
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    // The circuit opens after 3 failures none more than 5 s after the one before, the first 5 s ago
    // (retries every 0.5 s and up keep them coming): the receiver is down from the first delivery on.
    WEBHOOK_BREAKER_FAILURES: '3',
    WEBHOOK_BREAKER_SPAN_MS: '5000',
    WEBHOOK_RETRY_INITIAL_MS: '500',
    WEBHOOK_RETRY_MAX_INTERVAL_MS: '2000',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
  });
  // A loopback port nobody listens on: every connection is refused.
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as { port: number }).port;
  probe.close();
  await once(probe, 'close');
  deadUrl = `http://127.0.0.1:${port}/hooks`;
});

after(async () => {
  const rows = await svc?.tdb.db.selectFrom('webhook_deliveries').select('id').where('delivered_at', 'is', null).execute();
  for (const r of rows ?? [])
    await svc.gw.client.workflow
      .getHandle(r.id)
      .terminate('test over')
      .catch(() => undefined);
  await svc?.close();
});

async function createImage(t: Tenant, prompt: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await api(svc.gw.baseUrl, t.apiKey).post('/v1/images/generate', {
    project_id: t.projectId,
    prompt,
    model: 'nano-banana-2',
    aspect_ratio: '1:1',
    count: 1,
    ...extra,
  });
  assert.equal(r.status, 200, r.text);
  return r.body.data.id as string;
}

/** Every event of the key's workspace after `after`, read page by page as a client would. */
async function readLog(t: Tenant, query = '', pageSize = 7): Promise<any[]> {
  const out: any[] = [];
  let after = 0;
  for (;;) {
    const r = await api(svc.gw.baseUrl, t.apiKey).get(`/v1/events?after=${after}&limit=${pageSize}${query}`);
    assert.equal(r.status, 200, r.text);
    out.push(...r.body.data);
    if (!r.body.has_more) return out;
    assert.ok(r.body.next_after > after, 'next_after moves on');
    after = r.body.next_after;
  }
}

const assertGapFree = (seqs: number[], from = 1) =>
  assert.deepEqual(
    seqs,
    Array.from({ length: seqs.length }, (_, i) => from + i),
    'seq gap-free and in order',
  );

describe('the workspace event log', () => {
  test(
    'a receiver down for the whole run (circuit open) recovers every event from GET /v1/events: none missing, none repeated',
    { timeout: 300_000 },
    async () => {
      const t = await createTenant(svc.tdb.db, 1000);
      await rotateWebhookSecret(svc.tdb.db, { workspaceId: t.workspaceId, actorEmail: t.ownerEmail, graceSeconds: 0, key: secretsEncryptionKey(svc.config) });
      // A low-balance alert the first charge crosses, to the same dead receiver.
      const alerts = await api(svc.gw.baseUrl, t.apiKey).call('PUT', '/v1/balance/alerts', { thresholds: [999], url: deadUrl });
      assert.equal(alerts.status, 200, alerts.text);

      const ids = await Promise.all(
        Array.from({ length: 8 }, (_, i) => createImage(t, `down ${i}`, { webhook_url: deadUrl, webhook_events: ['generating', 'completed', 'failed'] })),
      );
      const records = await Promise.all(ids.map((id) => waitForJobStatus(api(svc.gw.baseUrl, t.apiKey), `/v1/images/${id}`, ['completed', 'failed'])));
      await waitFor(
        "the receiver's circuit open",
        async () => ((await getCircuit(svc.tdb.db, { workspaceId: t.workspaceId, destination: new URL(deadUrl).host })).state === 'open' ? true : undefined),
        120_000,
        250,
      );
      const deliveries = await svc.tdb.db
        .selectFrom('webhook_deliveries')
        .select(['id', 'type', 'delivered_at'])
        .where('workspace_id', '=', t.workspaceId)
        .execute();
      assert.ok(deliveries.length >= 8 * 2 + 1, `every job's events and the balance alert went to the outbox (${deliveries.length})`);
      assert.ok(
        deliveries.every((d) => d.delivered_at === null),
        'the receiver got nothing',
      );

      const log = await readLog(t);
      assertGapFree(log.map((e) => e.seq));
      assert.equal(new Set(log.map((e) => e.id)).size, log.length, 'no event repeated');
      const byId = new Map(log.map((e) => [e.id, e]));
      for (const d of deliveries) {
        const e = byId.get(d.id);
        assert.ok(e, `the missed delivery ${d.id} (${d.type}) is in the log`);
        assert.equal(e.type, d.type);
      }
      assert.equal(log.filter((e) => e.type === 'balance.low').length, 1, 'one balance.low: the threshold was crossed once');
      // What each job did: its status moves, in the order it made them, the last one its record now.
      for (const [i, id] of ids.entries()) {
        const own = log.filter((e) => e.subject_id === id);
        assert.deepEqual(
          own.map((e) => e.type),
          ['job.pending', 'job.generating', `job.${records[i].status}`],
          `the moves of ${id}`,
        );
        for (const e of own) assert.equal(e.data.id, id);
        const last = own[own.length - 1];
        assert.equal(last.data.status, records[i].status);
        assert.deepEqual(last.data.outputs, records[i].outputs);
      }
      const last = await lastWorkspaceSeq(svc.tdb.db, t.workspaceId);
      assert.equal(log.length, last, 'the log holds every number the counter handed out');
      console.log(`[workspace-events] receiver down: ${deliveries.length} deliveries missed, all ${log.length} events recovered from the log`);
    },
  );

  test(
    "a pipeline's moves and a budget's threshold are in the log: each once, in the order they happened, ids the webhooks' ids",
    { timeout: 300_000 },
    async () => {
      const t = await createTenant(svc.tdb.db, 10_000);
      await rotateWebhookSecret(svc.tdb.db, { workspaceId: t.workspaceId, actorEmail: t.ownerEmail, graceSeconds: 0, key: secretsEncryptionKey(svc.config) });
      const pipeline = {
        project_id: t.projectId,
        steps: [imageStep(), videoStep()],
        webhook_url: deadUrl,
        webhook_events: ['pipeline.completed', 'pipeline.failed', 'pipeline.step.completed', 'pipeline.step.failed'],
      };
      const quote = await api(svc.gw.baseUrl, t.apiKey).post('/v1/pipelines?dry_run=true', pipeline);
      assert.equal(quote.status, 200, quote.text);
      // A key whose budget's first threshold (1 % of 300: 3 credits) the first step's charge (an
      // image, 4 credits) crosses; the second (100 %) the whole pipeline does not reach.
      const limit = 300;
      assert.ok(quote.body.data.price < limit, `the pipeline costs ${quote.body.data.price}, under the budget`);
      const minted = await api(svc.gw.baseUrl, t.apiKey).post('/v1/api-keys', {
        name: 'pipelines',
        scopes: ['read', 'generate'],
        budget: { limit, period: 'month', alert_at: [1, 100] },
      });
      assert.equal(minted.status, 200, minted.text);
      const key = minted.body.data.key as string;
      const budgetId = minted.body.data.budgets[0].id as string;
      const created = await api(svc.gw.baseUrl, key).post('/v1/pipelines', pipeline);
      assert.equal(created.status, 200, created.text);
      const id = created.body.data.id as string;
      const done = await waitForJobStatus(api(svc.gw.baseUrl, key), `/v1/pipelines/${id}`, ['completed', 'failed', 'canceled'], 240_000);
      assert.equal(done.status, 'completed', JSON.stringify(done.error));
      const jobOf = new Map<string, string>(done.steps.map((s: { id: string; job_id: string }) => [s.id, s.job_id]));

      // The pipeline.completed event is written with the pipeline's last move; read once it is there.
      const all = await waitFor(
        "the pipeline's last event in the log",
        async () => {
          const log = await readLog(t, '', 50);
          return log.some((e) => e.type === 'pipeline.completed') ? log : undefined;
        },
        30_000,
        200,
      );
      assertGapFree(all.map((e) => e.seq));
      const picked = await readLog(t, '&types=pipeline.*,budget.threshold_reached', 2);
      assert.deepEqual(
        picked.map((e) => e.id),
        all.filter((e) => e.type.startsWith('pipeline.') || e.type.startsWith('budget.')).map((e) => e.id),
        'the filtered read is the log without the job events',
      );
      const pipelineEvents = picked.filter((e) => e.subject_id === id);
      assert.deepEqual(
        pipelineEvents.map((e) => [e.type, e.data.step?.id ?? null, e.data.step?.job_id ?? null, e.data.status]),
        [
          ['pipeline.step.completed', 'still', jobOf.get('still'), 'running'],
          // Written before the pipeline's own move in the same transaction: it still runs.
          ['pipeline.step.completed', 'clip', jobOf.get('clip'), 'running'],
          ['pipeline.completed', null, null, 'completed'],
        ],
        "the pipeline's moves, in order",
      );
      for (const e of pipelineEvents) assert.equal(e.data.id, id);
      // Each step's job moved before its step is reported done.
      const seqOf = (type: string, subject: string) => all.find((e) => e.type === type && e.subject_id === subject)?.seq;
      for (const [step, job] of jobOf) {
        const jobDone = seqOf('job.completed', job);
        assert.ok(jobDone, `the step ${step}'s job ${job} is in the log`);
        assert.ok(jobDone < pipelineEvents.find((e) => e.data.step?.id === step).seq, `${job} completed before its step's event`);
      }
      const budget = picked.filter((e) => e.type === 'budget.threshold_reached');
      assert.deepEqual(
        budget.map((e) => [e.subject_id, e.data.threshold, e.data.budget.id]),
        [[budgetId, 1, budgetId]],
        'one alert: the 1 % threshold, crossed once',
      );
      assert.ok(budget[0].seq < pipelineEvents[0].seq, "the first step's charge crossed it, before the step was done");

      // The webhooks to the dead receiver carry the same ids: what it missed, the log has.
      const deliveries = await svc.tdb.db
        .selectFrom('webhook_deliveries')
        .select(['id', 'type'])
        .where('workspace_id', '=', t.workspaceId)
        .where('type', 'like', 'pipeline.%')
        .execute();
      assert.deepEqual(deliveries.map((d) => d.id).sort(), pipelineEvents.map((e) => e.id).sort(), "every pipeline webhook's id is its event's id in the log");
    },
  );

  test('types keeps only the types and families asked for; an unknown type is a 400', async () => {
    const t = await createTenant(svc.tdb.db, 1000);
    const ids = await Promise.all([0, 1, 2].map((i) => createImage(t, `types ${i}`)));
    for (const id of ids) await waitForJobStatus(api(svc.gw.baseUrl, t.apiKey), `/v1/images/${id}`, ['completed', 'failed']);
    const all = await readLog(t);
    const completed = await readLog(t, '&types=job.completed', 2);
    assert.deepEqual(
      completed.map((e) => e.id),
      all.filter((e) => e.type === 'job.completed').map((e) => e.id),
    );
    assert.equal(completed.length, 3);
    const family = await readLog(t, '&types=job.*,balance.*');
    assert.deepEqual(
      family.map((e) => e.id),
      all.map((e) => e.id),
    );
    assert.deepEqual(await readLog(t, '&types=pipeline.*'), []);
    const bad = await api(svc.gw.baseUrl, t.apiKey).get('/v1/events?types=job.completed,jobs.*');
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.body.error.code, 'invalid_request');
    assert.match(bad.body.error.message, /types/);
  });

  test(
    'two gateways serve one SSE stream: the first is killed mid-way, the client resumes on the second with Last-Event-ID and loses or repeats nothing',
    { timeout: 300_000 },
    async () => {
      const t = await createTenant(svc.tdb.db, 1000);
      const [g1, g2] = await Promise.all([spawnGateway(svc.tdb.url), spawnGateway(svc.tdb.url)]);
      try {
        const auth = { authorization: `Bearer ${t.apiKey}` };
        const first = await openEventStream(g1.baseUrl, '/v1/events/stream', auth);
        assert.equal(first.status, 200, first.body);
        // An empty log: the backlog is nothing, and the stream says so at once.
        const [caught] = await first.waitForEvents(1);
        assert.deepEqual([caught!.event, caught!.id, JSON.parse(caught!.data)], ['caught_up', undefined, { seq: 0 }]);
        const before = await Promise.all(Array.from({ length: 5 }, (_, i) => createImage(t, `sse before ${i}`)));
        await first.waitForEvents(6);
        // Mid-way: jobs still moving, more created while no stream is open.
        g1.child.kill('SIGKILL');
        await first.waitForEnd(30_000);
        const during = await Promise.all(Array.from({ length: 3 }, (_, i) => createImage(t, `sse during ${i}`)));
        const logEvents = (events: SseEvent[]) => events.filter((e) => e.event !== 'caught_up');
        const seen: SseEvent[] = logEvents(first.events);
        const lastId = seen[seen.length - 1]!.id!;
        const second = await openEventStream(g2.baseUrl, '/v1/events/stream', { ...auth, 'Last-Event-ID': lastId });
        assert.equal(second.status, 200, second.body);
        const afterIds = await Promise.all(Array.from({ length: 3 }, (_, i) => createImage(t, `sse after ${i}`)));
        for (const id of [...before, ...during, ...afterIds])
          await waitForJobStatus(api(svc.gw.baseUrl, t.apiKey), `/v1/images/${id}`, ['completed', 'failed']);
        const total = await lastWorkspaceSeq(svc.tdb.db, t.workspaceId);
        // The backlog since lastId, `caught_up`, then the rest as it commits.
        await second.waitForEvents(total - Number(lastId) + 1, 60_000);
        second.close();
        assert.equal(second.events.filter((e) => e.event === 'caught_up').length, 1);
        const events = [...seen, ...logEvents(second.events)];
        assertGapFree(events.map((e) => Number(e.id)));
        assert.equal(events.length, total, 'every event of the workspace, once');
        // Each SSE event is the log's event of that number.
        const log = await svc.tdb.db
          .selectFrom('workspace_events')
          .select(['seq', 'id', 'type'])
          .where('workspace_id', '=', t.workspaceId)
          .orderBy('seq')
          .execute();
        for (const [i, e] of events.entries()) {
          const body = JSON.parse(e.data);
          assert.equal(body.seq, Number(e.id));
          assert.equal(body.id, log[i]!.id);
          assert.equal(e.event, log[i]!.type);
        }
        assert.equal(events.filter((e) => e.event === 'job.pending').length, 11);
        console.log(
          `[workspace-events] SSE: ${seen.length} events from the killed gateway, ${logEvents(second.events).length} from the other, ${total} in the log`,
        );
      } finally {
        await g2.close();
        await g1.close();
      }
    },
  );

  test("a stream resumed at the log's last event sends caught_up and then the next event; one past the end starts from the oldest", async () => {
    const t = await createTenant(svc.tdb.db, 1000);
    await waitForJobStatus(api(svc.gw.baseUrl, t.apiKey), `/v1/images/${await createImage(t, 'past the end')}`, ['completed', 'failed']);
    const last = await lastWorkspaceSeq(svc.tdb.db, t.workspaceId);
    const auth = { authorization: `Bearer ${t.apiKey}` };
    // A number the log never handed out cannot mean "seen": everything from the oldest, then caught_up.
    const past = await openEventStream(svc.gw.baseUrl, '/v1/events/stream', { ...auth, 'Last-Event-ID': String(last + 1000) });
    assert.equal(past.status, 200, past.body);
    const replay = await past.waitForEvents(last + 1);
    past.close();
    assert.deepEqual(
      replay.map((e) => e.id ?? e.event),
      [...Array.from({ length: last }, (_, i) => String(i + 1)), 'caught_up'],
    );
    // At the last event exactly: caught_up at once, then the next event when it commits.
    const at = await openEventStream(svc.gw.baseUrl, '/v1/events/stream', { ...auth, 'Last-Event-ID': String(last) });
    assert.equal(at.status, 200, at.body);
    const [caught] = await at.waitForEvents(1);
    assert.deepEqual([caught!.event, JSON.parse(caught!.data)], ['caught_up', { seq: last }]);
    await createImage(t, 'the next one');
    const [, next] = await at.waitForEvents(2);
    at.close();
    assert.equal(Number(next!.id), last + 1);
    assert.equal(next!.event, 'job.pending');
  });

  test('the retention sweep removes events past EVENTS_RETENTION_DAYS; the rest reads gap-free from the oldest kept', async () => {
    const t = await createTenant(svc.tdb.db, 1000);
    const ids = await Promise.all([0, 1].map((i) => createImage(t, `retention ${i}`)));
    for (const id of ids) await waitForJobStatus(api(svc.gw.baseUrl, t.apiKey), `/v1/images/${id}`, ['completed', 'failed']);
    const all = await readLog(t);
    assert.equal(all.length, 6);
    // The first three are 40 days old.
    await sql`update workspace_events set created_at = now() - interval '40 days' where workspace_id = ${t.workspaceId} and seq <= 3`.execute(svc.tdb.db);
    const removed = await sweepWorkspaceEvents(svc.tdb.db, svc.config.EVENTS_RETENTION_DAYS);
    assert.ok(removed >= 3, `removed ${removed}`);
    const kept = await readLog(t);
    assert.deepEqual(
      kept.map((e) => e.id),
      all.slice(3).map((e) => e.id),
    );
    assertGapFree(
      kept.map((e) => e.seq),
      4,
    );
    // Numbering goes on after the sweep.
    const more = await createImage(t, 'retention after');
    await waitForJobStatus(api(svc.gw.baseUrl, t.apiKey), `/v1/images/${more}`, ['completed', 'failed']);
    assertGapFree(
      (await readLog(t)).map((e) => e.seq),
      4,
    );
  });
});
