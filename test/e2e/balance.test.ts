// The balance on the real stack, over HTTP: GET /v1/balance equals the ledger summed by SQL, with
// jobs held at their provider step counted as held (and completed and refunded jobs not); 20
// concurrent creates crossing a threshold send one signed balance.low per threshold crossed, and a
// grant back above it arms it again; only an owner key sets the alerts (audited); bad input is a 4xx.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MediaGenClient, MediaGenError } from '@mediagen/client';
import { verifyWebhook } from '@mediagen/client/webhooks';
import { createGateway, type Gateway } from '../../api/gateway.js';
import { createTenant, createTestDatabase, testConfig, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, startWorkers, type Workers } from '../support/services.js';
import { Receiver } from '../support/webhook-receiver.js';
import { createImage, jobFinished, jobRow } from '../support/job-helpers.js';
import { addMember, adjustCredits, createApiKey } from '../../db/repos/workspaces.js';
import { rotateWebhookSecret } from '../../db/repos/webhooks.js';
import { secretsEncryptionKey } from '../../shared/webhooks/signing.js';
import { balanceLowEventSchema, balancePeriod } from '../../shared/balance.js';
import type { Config } from '../../shared/config.js';

let tdb: TestDatabase;
let config: Config;
let gw: Gateway;
let workers: Workers;
/** A second fleet on the same database whose local renderer takes 10 minutes: its jobs stay generating, charged. */
let slowGw: Gateway;
let slowWorkers: Workers;
const receiver = new Receiver();

const settings = {
  WEBHOOK_ALLOW_LOOPBACK: 'true',
  WEBHOOK_TIMEOUT_MS: '1000',
  WEBHOOK_RETRY_INITIAL_MS: '100',
  WEBHOOK_RETRY_MAX_INTERVAL_MS: '300',
  LOCAL_RENDER_FAULTS: 'true',
  RATE_LIMIT_GENERATE_PER_MIN: '10000',
  RATE_LIMIT_POLL_PER_MIN: '100000',
};

before(async () => {
  tdb = await createTestDatabase();
  config = testConfig(tdb.url, settings);
  gw = createGateway({ ...config, HOST: '127.0.0.1', PORT: 0 }, { db: tdb.db, processExtras: false });
  await gw.start();
  workers = await startWorkers(config, tdb.db);
  // Either fleet's control loops may hold the webhook dispatch: both deliver to the loopback receiver.
  const slowConfig = testConfig(tdb.url, { ...settings, LOCAL_RENDER_LATENCY_MS: '600000' });
  slowGw = createGateway({ ...slowConfig, HOST: '127.0.0.1', PORT: 0 }, { db: tdb.db, processExtras: false });
  await slowGw.start();
  slowWorkers = await startWorkers(slowConfig, tdb.db);
  await receiver.start();
});

after(async () => {
  await receiver.close();
  await slowWorkers?.stop();
  await slowGw?.stop({ graceMs: 0 });
  await workers?.stop();
  await gw?.stop({ graceMs: 0 });
  await tdb?.drop();
});

const balanceOf = async (key: string) => {
  const r = await api(gw.baseUrl, key).get('/v1/balance');
  assert.equal(r.status, 200, r.text);
  return r.body.data as {
    unit: string;
    available: number;
    held: number;
    granted_this_period: number;
    deducted_this_period: number;
    spent_this_period: number;
    refunded_this_period: number;
    period: { start: string; end: string };
    thresholds: number[];
  };
};

const putAlerts = (key: string, body: unknown) => api(gw.baseUrl, key).call('PUT', '/v1/balance/alerts', body);

/** The same figures, summed from the ledger and the jobs' statuses by SQL. */
async function ledgerFigures(workspaceId: string) {
  const { start, end } = balancePeriod(new Date());
  const { rows } = await sql<{ available: number; held: number; granted: number; spent: number; refunded: number; credits: number }>`
    select (select coalesce(sum(delta), 0)::int from credit_ledger where workspace_id = ${workspaceId}) as available,
           (select coalesce(-sum(l.delta), 0)::int from credit_ledger l join jobs j on j.id = l.job_id
             where l.workspace_id = ${workspaceId} and j.status not in ('completed', 'failed')) as held,
           (select coalesce(sum(delta), 0)::int from credit_ledger
             where workspace_id = ${workspaceId} and reason = 'grant' and created_at >= ${start} and created_at < ${end}) as granted,
           (select coalesce(-sum(delta), 0)::int from credit_ledger
             where workspace_id = ${workspaceId} and reason in ('charge', 'recharge', 'refund') and created_at >= ${start} and created_at < ${end}) as spent,
           (select coalesce(sum(delta), 0)::int from credit_ledger
             where workspace_id = ${workspaceId} and reason = 'refund' and created_at >= ${start} and created_at < ${end}) as refunded,
           (select credits from workspaces where id = ${workspaceId}) as credits`.execute(tdb.db);
  return rows[0]!;
}

/**
 * GET /v1/balance against the ledger by SQL. Jobs may still be finishing, so the two reads are
 * compared only when the ledger did not move across the API's read (read before and after it;
 * retried until it held still).
 */
async function assertBalanceIsLedger(t: Tenant) {
  let b = await balanceOf(t.apiKey);
  let l = await ledgerFigures(t.workspaceId);
  for (let tries = 0; tries < 50; tries++) {
    const before = await ledgerFigures(t.workspaceId);
    b = await balanceOf(t.apiKey);
    l = await ledgerFigures(t.workspaceId);
    if (JSON.stringify(before) === JSON.stringify(l)) break;
  }
  assert.equal(l.credits, l.available, 'the cached balance nets the ledger');
  assert.deepEqual(
    { available: b.available, held: b.held, granted: b.granted_this_period, spent: b.spent_this_period, refunded: b.refunded_this_period },
    { available: l.available, held: l.held, granted: l.granted, spent: l.spent, refunded: l.refunded },
  );
  return b;
}

async function withSigningSecret(t: Tenant): Promise<string> {
  return (await rotateWebhookSecret(tdb.db, { workspaceId: t.workspaceId, actorEmail: t.ownerEmail, graceSeconds: 0, key: secretsEncryptionKey(config) }))
    .secret;
}

const balanceLowEvents = (workspaceId: string) =>
  tdb.db.selectFrom('webhook_deliveries').selectAll().where('workspace_id', '=', workspaceId).where('type', '=', 'balance.low').orderBy('created_at').execute();

describe('balance', () => {
  test('GET /v1/balance equals the ledger by SQL: jobs held at their provider step count as held, completed and refunded ones do not', async () => {
    const t = await createTenant(tdb.db, 1000);
    const done = [await createImage(gw.baseUrl, t, 'kept one'), await createImage(gw.baseUrl, t, 'kept two')];
    const failed = await createImage(gw.baseUrl, t, 'refunded [fail:terminal]');
    for (const id of [...done, failed]) await jobFinished(tdb.db, id);
    assert.equal((await jobRow(tdb.db, failed)).status, 'failed');
    await waitFor('the failed job refunded', async () => (await jobRow(tdb.db, failed)).credits_refunded === 4);

    // Three jobs at the slow renderer: submitted, generating, charged.
    const held: string[] = [];
    for (let i = 0; i < 3; i++) held.push(await createImage(slowGw.baseUrl, t, `held ${i}`));
    for (const id of held) {
      await waitFor(`${id} submitted to the slow renderer`, async () => {
        const row = await jobRow(tdb.db, id);
        return row.status === 'generating' && row.provider_ref !== null;
      });
    }

    const b = await assertBalanceIsLedger(t);
    // 1000 granted; six 4-credit creates, one refunded: 20 spent, 12 of them held by the three in flight.
    assert.deepEqual(
      { unit: b.unit, available: b.available, held: b.held, granted: b.granted_this_period, spent: b.spent_this_period, refunded: b.refunded_this_period },
      { unit: 'credits', available: 980, held: 12, granted: 1000, spent: 20, refunded: 4 },
    );
    const { start, end } = balancePeriod(new Date());
    assert.deepEqual(b.period, { start: start.toISOString(), end: end.toISOString() });

    // Canceled in flight: each is refunded (the local renderer costs nothing), and nothing is held any more.
    for (const id of held) {
      const r = await api(slowGw.baseUrl, t.apiKey).post(`/v1/images/${id}/cancel`);
      assert.equal(r.status, 200, r.text);
    }
    for (const id of held) await jobFinished(tdb.db, id);
    const settled = await assertBalanceIsLedger(t);
    assert.equal(settled.held, 0, 'nothing held once every job finished');
    assert.equal(settled.available - b.available, settled.refunded_this_period - b.refunded_this_period, 'what the cancels refunded came back to available');
    assert.ok(settled.refunded_this_period > b.refunded_this_period, 'the cancels refunded');
  });

  test('20 concurrent creates crossing two thresholds send exactly one signed balance.low each; a grant back above a threshold arms it again', async () => {
    const t = await createTenant(tdb.db, 100);
    const secret = await withSigningSecret(t);
    const path = `/balance-low/${t.workspaceId}`;
    const set = await putAlerts(t.apiKey, { thresholds: [70, 30, 10], url: `${receiver.base}${path}` });
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(set.body.data, { thresholds: [70, 30, 10], url: `${receiver.base}${path}` });

    // 100 → 20 in twenty 4-credit charges, all at once: 70 and 30 are crossed, 10 is not.
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => api(gw.baseUrl, t.apiKey).post('/v1/images/generate', imageOf(t, `race ${i}`))));
    assert.deepEqual(
      answers.map((r) => r.status),
      Array.from({ length: 20 }, () => 200),
    );
    await waitFor('both events delivered', async () => {
      const rows = await balanceLowEvents(t.workspaceId);
      return rows.length >= 2 && rows.every((r) => r.delivered_at !== null) && receiver.at(path).length >= 2;
    });
    const rows = await balanceLowEvents(t.workspaceId);
    assert.equal(rows.length, 2, 'one event per threshold crossed');
    const got = receiver.at(path);
    assert.equal(got.length, 2, 'one request per event');
    const events = got.map((r) => balanceLowEventSchema.parse(verifyWebhook(secret, r.body, r.headers)));
    assert.deepEqual(
      events.map((e) => e.data.threshold).sort((a, b) => b - a),
      [70, 30],
    );
    for (const e of events) {
      assert.equal(e.data.workspace_id, t.workspaceId);
      assert.ok(e.data.previous >= e.data.threshold && e.data.available < e.data.threshold, `crossed at ${e.data.previous} → ${e.data.available}`);
      assert.equal(e.data.previous - e.data.available, 4, 'by one charge');
    }
    assert.deepEqual(
      events.map((e) => e.data.available).sort((a, b) => b - a),
      [68, 28],
      'by the charges that took the balance from 72 and from 32',
    );

    // A grant to 72 arms 70 again (30 stays crossed); one charge crosses it once more, the next crosses nothing.
    const now = (await balanceOf(t.apiKey)).available;
    await adjustCredits(tdb.db, t.workspaceId, 72 - now, 'top up');
    assert.equal((await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', imageOf(t, 'across again'))).status, 200);
    assert.equal((await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', imageOf(t, 'below already'))).status, 200);
    await waitFor('the third event delivered', async () => receiver.at(path).length >= 3);
    const third = balanceLowEventSchema.parse(verifyWebhook(secret, receiver.at(path)[2]!.body, receiver.at(path)[2]!.headers));
    assert.deepEqual([third.data.threshold, third.data.previous, third.data.available], [70, 72, 68]);
    assert.equal((await balanceLowEvents(t.workspaceId)).length, 3, 'the charge from 68 to 64 crossed nothing');
    await assertBalanceIsLedger(t);
  });

  test('only an owner key sets the alerts, audited; any key reads the balance; bad input is a 400 and changes nothing', async () => {
    const t = await createTenant(tdb.db, 50);
    const memberEmail = `member-${t.workspaceId}@example.test`;
    await addMember(tdb.db, t.workspaceId, memberEmail, 'owner');
    const memberKey = await createApiKey(tdb.db, { workspaceId: t.workspaceId, name: 'member', actorEmail: memberEmail });
    // Demoted before the key's first use: the gateway sees a member's key.
    await addMember(tdb.db, t.workspaceId, memberEmail, 'member');
    const url = `${receiver.base}/alerts/${t.workspaceId}`;

    const refused = await putAlerts(memberKey.key, { thresholds: [10], url });
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.error.code, 'owner_key_required');
    assert.equal((await balanceOf(memberKey.key)).available, 50, 'a member key reads the balance');

    const noSecret = await putAlerts(t.apiKey, { thresholds: [10], url });
    assert.equal(noSecret.status, 400, noSecret.text);
    assert.match(noSecret.body.error.message, /signing secret/);
    await withSigningSecret(t);

    // Thresholds without a url are valid: the crossings go to the endpoints subscribed to balance.*
    // (test/e2e/webhook-endpoints.test.ts).
    const bad: Array<[unknown, RegExp]> = [
      [{ thresholds: [], url }, /url: must be null/],
      [{ thresholds: [0], url }, /thresholds/],
      [{ thresholds: [-5], url }, /thresholds/],
      [{ thresholds: [1.5], url }, /thresholds/],
      [{ thresholds: [1_000_000_001], url }, /thresholds/],
      [{ thresholds: Array.from({ length: 11 }, (_, i) => i + 1), url }, /thresholds/],
      [{ thresholds: 'low', url }, /thresholds/],
      [{ thresholds: [10], url: 'ftp://example.test/x' }, /url/],
      [{ thresholds: [10], url: 'not a url' }, /url/],
      [{ thresholds: [10], url, extra: true }, /extra|unrecognized/i],
      [[10], /./],
      [null, /./],
    ];
    for (const [body, message] of bad) {
      const r = await putAlerts(t.apiKey, body);
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.body.error.code, 'invalid_request');
      assert.match(r.body.error.message, message, JSON.stringify(body));
    }
    const notJson = await fetch(`${gw.baseUrl}/v1/balance/alerts`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: '{"thresholds": [',
    });
    assert.equal(notJson.status, 400);
    assert.equal(((await notJson.json()) as { error: { code: string } }).error.code, 'invalid_request');
    assert.deepEqual((await balanceOf(t.apiKey)).thresholds, [], 'nothing was set');

    const set = await putAlerts(t.apiKey, { thresholds: [5, 20, 20], url: `${url}?token=abc` });
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(set.body.data.thresholds, [20, 5]);
    assert.deepEqual((await balanceOf(memberKey.key)).thresholds, [20, 5]);
    const off = await putAlerts(t.apiKey, { thresholds: [] });
    assert.equal(off.status, 200, off.text);
    assert.deepEqual(off.body.data, { thresholds: [], url: null });

    const audit = await tdb.db
      .selectFrom('audit_events')
      .selectAll()
      .where('workspace_id', '=', t.workspaceId)
      .where('action', '=', 'balance.alerts_set')
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    const origin = new URL(url).origin;
    assert.deepEqual(
      audit.map((e) => [e.actor, e.target_id, e.details]),
      [
        [`key:${t.apiKeyId}`, t.workspaceId, { old: { thresholds: [], url: null }, new: { thresholds: [20, 5], url: origin } }],
        [`key:${t.apiKeyId}`, t.workspaceId, { old: { thresholds: [20, 5], url: origin }, new: { thresholds: [], url: null } }],
      ],
      'one event per change, never the URL path or query',
    );
  });
  test('the TypeScript client and `mediagen balance` read the balance and set the alerts; a member key is refused', async () => {
    const t = await createTenant(tdb.db, 300);
    await withSigningSecret(t);
    const url = `${receiver.base}/client/${t.workspaceId}`;
    const mg = new MediaGenClient({ apiKey: t.apiKey, baseUrl: gw.baseUrl });
    assert.deepEqual(await mg.balance.setAlerts({ thresholds: [100], url }), { data: { thresholds: [100], url } });
    const b = (await mg.balance.get()).data;
    assert.deepEqual([b.available, b.held, b.granted_this_period, b.thresholds], [300, 0, 300, [100]]);

    const env = { MEDIAGEN_API_KEY: t.apiKey, MEDIAGEN_BASE_URL: gw.baseUrl };
    const shown = await mediagen(['balance', '--json'], env);
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal(JSON.parse(shown.stdout).data.available, 300);
    const human = await mediagen(['balance'], env);
    assert.match(human.stdout, /available\s+300 credits/);
    assert.match(human.stdout, /alerts\s+below 100/);
    const set = await mediagen(['balance', '--alerts', '250,50', '--alert-url', url, '--json'], env);
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout).data.thresholds, [250, 50]);
    assert.equal((await mediagen(['balance', '--alerts', 'low'], env)).code, 2, 'a usage error');

    const memberEmail = `member-${t.workspaceId}@example.test`;
    await addMember(tdb.db, t.workspaceId, memberEmail, 'owner');
    const memberKey = await createApiKey(tdb.db, { workspaceId: t.workspaceId, name: 'member', actorEmail: memberEmail });
    await addMember(tdb.db, t.workspaceId, memberEmail, 'member');
    const member = new MediaGenClient({ apiKey: memberKey.key, baseUrl: gw.baseUrl });
    await assert.rejects(
      member.balance.setAlerts({ thresholds: [] }),
      (err: unknown) => err instanceof MediaGenError && err.status === 403 && err.code === 'owner_key_required',
    );
    const refused = await mediagen(['balance', '--alerts', 'none'], { ...env, MEDIAGEN_API_KEY: memberKey.key });
    assert.equal(refused.code, 4, 'auth (403)');
    assert.match(refused.stderr, /owner/);
    assert.deepEqual((await member.balance.get()).data.thresholds, [250, 50], 'unchanged, and readable with a member key');
  });
});

const imageOf = (t: Tenant, prompt: string) => ({ project_id: t.projectId, prompt, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });

const cli = fileURLToPath(new URL('../../../client/bin/mediagen.js', import.meta.url));

/** Runs the CLI: its exit code and output. */
function mediagen(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}
