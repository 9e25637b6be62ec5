// Budgets per API key and per project on the real stack, over HTTP: concurrent creates against a
// key's budget admit exactly what the limit allows; a project's budget binds every key; refunds free
// budget; the period rolls over at the reset time the 402 states (the gateway's clock is moved);
// a threshold alert is delivered once, signed; the admin commands write one audit event each.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook } from '@mediagen/client/webhooks';
import { createGateway, type Gateway } from '../../api/gateway.js';
import { createTenant, createTestDatabase, testConfig, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, startWorkers, type Workers } from '../support/services.js';
import { runAdmin } from '../../admin/main.js';
import { createApiKey } from '../../db/repos/workspaces.js';
import { Receiver } from '../support/webhook-receiver.js';
import type { Config } from '../../shared/config.js';
import { budgetThresholdEventSchema } from '../../shared/budgets.js';

let tdb: TestDatabase;
let config: Config;
let gw: Gateway;
let workers: Workers;
const receiver = new Receiver();
/** The gateway's clock: stopped at this instant (ms since the epoch), or the system clock when null. */
let frozenAt: number | null = null;

const admin = async (...args: string[]) => {
  const r = await runAdmin([...args, '--json'], { ...process.env, DATABASE_URL: tdb.url, WEBHOOK_ALLOW_LOOPBACK: 'true' });
  return { code: r.code, out: r.code === 0 ? JSON.parse(r.stdout) : null, stderr: r.stderr };
};

const image = (t: Tenant, prompt: string) => ({ project_id: t.projectId, prompt, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
const create = (t: Tenant, prompt: string, key = t.apiKey, headers: Record<string, string> = {}) =>
  api(gw.baseUrl, key).post('/v1/images/generate', image(t, prompt), headers);
const budgetsOf = async (t: Tenant) => {
  const r = await api(gw.baseUrl, t.apiKey).get('/v1/budgets');
  assert.equal(r.status, 200, r.text);
  return r.body.data as Array<{
    id: string;
    scope: string;
    scope_id: string;
    period: string;
    limit: number;
    spent: number;
    remaining: number;
    resets_at: string;
  }>;
};

/** The net credits the ledger holds for the jobs of the key (or project). */
async function ledgerNet(column: 'api_key_id' | 'project_id', id: string): Promise<number> {
  const row = await tdb.db
    .selectFrom('credit_ledger as l')
    .innerJoin('jobs as j', 'j.id', 'l.job_id')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<string>('l.delta'), eb.val('0')).as('sum'))
    .where(`j.${column}`, '=', id)
    .executeTakeFirstOrThrow();
  return -Number(row.sum);
}

before(async () => {
  tdb = await createTestDatabase();
  config = testConfig(tdb.url, {
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    WEBHOOK_TIMEOUT_MS: '1000',
    WEBHOOK_RETRY_INITIAL_MS: '100',
    WEBHOOK_RETRY_MAX_INTERVAL_MS: '300',
    LOCAL_RENDER_FAULTS: 'true',
    RATE_LIMIT_GENERATE_PER_MIN: '10000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
  });
  gw = createGateway({ ...config, HOST: '127.0.0.1', PORT: 0 }, { db: tdb.db, processExtras: false, clock: () => new Date(frozenAt ?? Date.now()) });
  await gw.start();
  workers = await startWorkers(config, tdb.db);
  await receiver.start();
});

after(async () => {
  await receiver.close();
  await workers?.stop();
  await gw?.stop({ graceMs: 0 });
  await tdb?.drop();
});

describe('budgets', () => {
  test('20 concurrent 4-credit creates against a 40-credit key budget: exactly 10 admitted, 10 refused 402 budget_exceeded; the period rolls over at the stated time', async () => {
    frozenAt = null;
    const t = await createTenant(tdb.db, 10_000);
    const set = await admin('budget', 'set', '--workspace', t.workspaceId, '--key', t.apiKeyId, '--period', 'day', '--limit', '40');
    assert.equal(set.code, 0, set.stderr);

    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => create(t, `budget race ${i}`)));
    const admitted = answers.filter((r) => r.status === 200);
    const refused = answers.filter((r) => r.status === 402);
    assert.equal(admitted.length, 10, answers.map((r) => r.status).join(','));
    assert.equal(refused.length, 10);
    const now = new Date();
    const midnight = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString();
    for (const r of refused) {
      assert.equal(r.body.error.code, 'budget_exceeded');
      assert.match(r.body.error.message, new RegExp(`key ${t.apiKeyId}`));
      assert.deepEqual(
        {
          scope: r.body.scope,
          scope_id: r.body.scope_id,
          period: r.body.period,
          limit: r.body.limit,
          remaining: r.body.remaining,
          resets_at: r.body.resets_at,
        },
        { scope: 'key', scope_id: t.apiKeyId, period: 'day', limit: 40, remaining: 0, resets_at: midnight },
      );
    }
    // The ledger, the counter and the API agree.
    assert.equal(await ledgerNet('api_key_id', t.apiKeyId), 40);
    const [b] = await budgetsOf(t);
    assert.deepEqual({ spent: b!.spent, remaining: b!.remaining, resets_at: b!.resets_at }, { spent: 40, remaining: 0, resets_at: midnight });
    const counter = await tdb.db.selectFrom('budget_spend').select('spent').where('budget_id', '=', b!.id).executeTakeFirstOrThrow();
    assert.equal(counter.spent, 40);

    // A dry run says the budget would refuse.
    const dry = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate?dry_run=true', image(t, 'dry'));
    assert.equal(dry.status, 200, dry.text);
    assert.equal(dry.body.data.within_budget, false);
    assert.equal(dry.body.data.budget_remaining, 0);

    // One millisecond before the stated reset: still refused, with the same reset time.
    frozenAt = Date.parse(midnight) - 1;
    const before = await create(t, 'just before midnight');
    assert.equal(before.status, 402, before.text);
    assert.equal(before.body.resets_at, midnight);
    // At the reset time: admitted again, in a new period.
    frozenAt = Date.parse(midnight);
    const afterReset = await create(t, 'at midnight');
    assert.equal(afterReset.status, 200, afterReset.text);
    const [next] = await budgetsOf(t);
    assert.equal(next!.spent, 4);
    assert.equal(next!.resets_at, new Date(Date.parse(midnight) + 86_400_000).toISOString());
    frozenAt = null;
  });

  test("a project's budget binds every key of the project; an idempotent retry counts once", async () => {
    frozenAt = null;
    const t = await createTenant(tdb.db, 10_000);
    const other = await createApiKey(tdb.db, { workspaceId: t.workspaceId, name: 'second', actorEmail: t.ownerEmail });
    assert.equal((await admin('budget', 'set', '--workspace', t.workspaceId, '--project', t.projectId, '--period', 'month', '--limit', '8')).code, 0);

    const first = await create(t, 'project one', t.apiKey, { 'idempotency-key': 'budget-retry-1' });
    assert.equal(first.status, 200, first.text);
    const retry = await create(t, 'project one', t.apiKey, { 'idempotency-key': 'budget-retry-1' });
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.body.data.id, first.body.data.id);
    assert.equal((await budgetsOf(t))[0]!.spent, 4, 'the retry was not counted again');

    assert.equal((await create(t, 'project two', other.key)).status, 200);
    const refused = await create(t, 'project three', other.key);
    assert.equal(refused.status, 402, refused.text);
    assert.equal(refused.body.error.code, 'budget_exceeded');
    assert.equal(refused.body.scope, 'project');
    assert.equal(refused.body.scope_id, t.projectId);
    assert.equal(refused.body.period, 'month');
    assert.equal(await ledgerNet('project_id', t.projectId), 8);
  });

  test('a refund frees budget: a failed job refunded in full lowers the period spend', async () => {
    frozenAt = null;
    const t = await createTenant(tdb.db, 10_000);
    assert.equal((await admin('budget', 'set', '--workspace', t.workspaceId, '--key', t.apiKeyId, '--period', 'day', '--limit', '8')).code, 0);
    const failing = await create(t, 'this one fails [fail:terminal]');
    assert.equal(failing.status, 200, failing.text);
    assert.equal((await create(t, 'this one runs')).status, 200);
    // The limit (8) was spent by the two; only the failed one's refund makes room for a third.
    await waitFor('the failed job refunded', async () => (await budgetsOf(t))[0]!.spent === 4, 90_000);
    assert.equal(await ledgerNet('api_key_id', t.apiKeyId), 4);
    assert.equal((await create(t, 'room again')).status, 200);
    assert.equal((await budgetsOf(t))[0]!.spent, 8);
    assert.equal((await create(t, 'no room')).status, 402, 'the limit still holds');
  });

  test('a threshold alert is delivered once per threshold and period, signed like job events', async () => {
    frozenAt = null;
    const t = await createTenant(tdb.db, 10_000);
    const rotated = await runAdmin(['webhook', 'secret', 'rotate', '--workspace', t.workspaceId, '--as', t.ownerEmail, '--json'], {
      ...process.env,
      DATABASE_URL: tdb.url,
    });
    assert.equal(rotated.code, 0, rotated.stderr);
    const secret = (JSON.parse(rotated.stdout) as { secret: string }).secret;
    const path = `/budget-alerts/${t.workspaceId}`;
    const set = await admin(
      'budget',
      'set',
      '--workspace',
      t.workspaceId,
      '--key',
      t.apiKeyId,
      '--period',
      'day',
      '--limit',
      '16',
      '--alert-at',
      '50,100',
      '--alert-url',
      `${receiver.base}${path}`,
    );
    assert.equal(set.code, 0, set.stderr);

    assert.equal((await create(t, 'alert 1')).status, 200); // 25%
    assert.equal((await create(t, 'alert 2')).status, 200); // 50%: the first alert
    assert.equal((await create(t, 'alert 3')).status, 200); // 75%
    assert.equal((await create(t, 'alert 4')).status, 200); // 100%: the second
    assert.equal((await create(t, 'alert 5')).status, 402);
    await waitFor('two alerts delivered', async () => {
      const rows = await tdb.db
        .selectFrom('webhook_deliveries')
        .select('delivered_at')
        .where('workspace_id', '=', t.workspaceId)
        .where('type', '=', 'budget.threshold_reached')
        .execute();
      return rows.length === 2 && rows.every((r) => r.delivered_at !== null);
    });
    const got = receiver.at(path);
    assert.equal(got.length, 2, 'one request per threshold');
    const events = got.map((r) => new Webhook(secret).verify(r.body, r.headers) as { type: string; data: any });
    for (const r of got) assert.equal(verifyWebhook(secret, r.body, r.headers).type, 'budget.threshold_reached');
    for (const e of events) budgetThresholdEventSchema.parse(e); // the body the OpenAPI document's webhooks section describes
    const [b] = await budgetsOf(t);
    assert.deepEqual(
      events.map((e) => [e.type, e.data.threshold, e.data.spent, e.data.limit, e.data.budget.id, e.data.period.resets_at]).sort((x, y) => x[1] - y[1]),
      [
        ['budget.threshold_reached', 50, 8, 16, b!.id, b!.resets_at],
        ['budget.threshold_reached', 100, 16, 16, b!.id, b!.resets_at],
      ],
    );
  });

  test('budget set, list and remove, and key list: each set and remove writes one audit event with the old and new values', async () => {
    frozenAt = null;
    const t = await createTenant(tdb.db, 10_000);
    const usage = await admin('budget', 'set', '--workspace', t.workspaceId, '--key', t.apiKeyId, '--project', t.projectId, '--period', 'day', '--limit', '5');
    assert.equal(usage.code, 2, 'both --key and --project is a usage error');
    assert.equal((await admin('budget', 'set', '--workspace', t.workspaceId, '--key', 'key_unknown', '--period', 'day', '--limit', '5')).code, 3);

    assert.equal((await admin('budget', 'set', '--workspace', t.workspaceId, '--key', t.apiKeyId, '--period', 'month', '--limit', '100')).code, 0);
    assert.equal(
      (await admin('budget', 'set', '--workspace', t.workspaceId, '--key', t.apiKeyId, '--period', 'month', '--limit', '120', '--alert-at', '90')).code,
      0,
    );
    assert.equal((await create(t, 'spend some')).status, 200);

    const list = await admin('budget', 'list', '--workspace', t.workspaceId);
    assert.equal(list.code, 0, list.stderr);
    assert.equal(list.out.length, 1);
    assert.deepEqual([list.out[0].limit, list.out[0].spent, list.out[0].remaining, list.out[0].alert_at], [120, 4, 116, [90]]);
    assert.match(list.out[0].resets_at, /^\d{4}-\d{2}-01T00:00:00\.000Z$/);
    const keys = await admin('key', 'list', '--workspace', t.workspaceId);
    assert.deepEqual(keys.out[0].budgets, [{ period: 'month', limit: 120, spent: 4, remaining: 116, resets_at: list.out[0].resets_at }]);

    assert.equal((await admin('budget', 'remove', '--workspace', t.workspaceId, '--key', t.apiKeyId, '--period', 'month')).code, 0);
    assert.equal((await admin('budget', 'remove', '--workspace', t.workspaceId, '--key', t.apiKeyId, '--period', 'month')).code, 3);
    assert.deepEqual(await budgetsOf(t), []);

    const audit = await tdb.db
      .selectFrom('audit_events')
      .selectAll()
      .where('workspace_id', '=', t.workspaceId)
      .where('action', 'in', ['budget.set', 'budget.removed'])
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    assert.deepEqual(
      audit.map((e) => [e.action, e.actor, e.target_type, (e.details as any).old?.limit ?? null, (e.details as any).new?.limit ?? null]),
      [
        ['budget.set', 'system:admin-cli', 'budget', null, 100],
        ['budget.set', 'system:admin-cli', 'budget', 100, 120],
        ['budget.removed', 'system:admin-cli', 'budget', 120, null],
      ],
    );
  });
});
