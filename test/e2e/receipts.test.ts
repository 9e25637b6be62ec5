// Job receipts on the real stack (the gateway over HTTP, workflows on Temporal, Postgres, MinIO):
// grok-video has two live routes here, fal's queue first, then xAI's own video API, both local
// fakes speaking their providers' protocols. A job whose fal request stops answering fails over to
// xAI, where it is canceled by its customer: its timeline lists the submit on fal, the give-up, the
// failover, the submit on xAI, the cancel request and the refund, in order and with the amounts,
// and its record's `charges` nets to the ledger summed in SQL. A plain job's timeline is its
// create, charge, run, submit, outputs and completion; another workspace gets 404.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MediaGenClient } from '@mediagen/client';
import { sql } from 'kysely';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, type InProcessGateway as Gateway } from '../support/services.js';
import { startFailoverStack, type FailoverStack } from '../support/failover-stack.js';
import { createVideoOnFal, jobFinished, jobRow } from '../support/job-helpers.js';
import type { FakeFal } from '../support/fake-providers/fal.js';
import type { FakeXai } from '../support/fake-providers/xai.js';
import { json } from '../support/fake-providers/server.js';

let stack: FailoverStack<'xai'>;
let tdb: TestDatabase;
let fal: FakeFal;
let xai: FakeXai;
let gw: Gateway;

const model = 'grok-video';
const price = 6; // grok-video, 1 second

before(async () => {
  stack = await startFailoverStack({ secondary: 'xai', roles: 'workflows,io,fetch,provider:fal,provider:xai' });
  ({ tdb, fal, secondary: xai, gw } = stack);
});

after(() => stack?.close());

const cli = fileURLToPath(new URL('../../../client/bin/mediagen.js', import.meta.url));

/** Runs the CLI as its own process against the gateway; its stdout and exit code. */
function mediagen(t: Tenant, args: string[]): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], {
      env: { ...process.env, MEDIAGEN_API_KEY: t.apiKey, MEDIAGEN_BASE_URL: gw.baseUrl },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
  });
}

type Entry = { at: number; type: string; details: Record<string, unknown> };

async function timeline(t: Tenant, path: string): Promise<{ charges: { charged: number; refunded: number; net: number }; entries: Entry[] }> {
  const r = await api(gw.baseUrl, t.apiKey).get(path);
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

/** The job's ledger summed in SQL, as `charges` says it. */
async function ledgerSums(id: string) {
  const { rows } = await sql<{ charged: number; refunded: number; net: number }>`
    select coalesce(sum(-delta) filter (where delta < 0), 0)::int as charged, coalesce(sum(delta) filter (where delta > 0), 0)::int as refunded,
           coalesce(-sum(delta), 0)::int as net
      from credit_ledger where job_id = ${id}`.execute(tdb.db);
  return rows[0]!;
}

/** The workflow of the job (and every provider cancel it started) has closed: nothing moves the job's credits any more. */
const workflowClosed = (id: string) =>
  waitFor(`${id}'s workflow to close`, async () => (await gw.client.workflow.getHandle(id).describe()).status.name !== 'RUNNING', 60_000, 200);

describe('job receipts', () => {
  test('a job that failed over, then was canceled: the timeline in order with the amounts, and charges net to the ledger', { timeout: 180_000 }, async () => {
    // fal takes the request, then its status answers 502 past the failover budget; xAI keeps it pending.
    fal.down(['status'], json(502, { detail: 'Bad Gateway' }));
    xai.pendingPolls = 1_000_000;
    const t = await createTenant(tdb.db, 100);
    const id = await createVideoOnFal(gw.baseUrl, t, model, '[receipt-failover]');
    await waitFor(
      'the job to be submitted on xAI',
      async () => ((await jobRow(tdb.db, id)).provider_ref as { provider?: string } | null)?.provider === 'xai',
      90_000,
      200,
    );

    const r = await api(gw.baseUrl, t.apiKey).post(`/v1/videos/${id}/cancel`, {});
    assert.equal(r.status, 200, r.text);
    const row = await jobFinished(tdb.db, id, 60_000);
    assert.equal(row.error?.code, 'canceled');
    await workflowClosed(id);
    fal.up();

    const record = (await api(gw.baseUrl, t.apiKey).get(`/v1/videos/${id}`)).body.data;
    const kept = record.cancel.kept as number;
    assert.ok(kept > 0 && kept < price, `xAI cannot cancel: its cost is kept (${kept})`);
    assert.deepEqual(record.charges, { charged: price, refunded: price - kept, net: kept });
    assert.deepEqual(record.charges, await ledgerSums(id), 'the record nets to the ledger');

    const { charges, entries } = await timeline(t, `/v1/videos/${id}/timeline`);
    assert.deepEqual(charges, record.charges);
    assert.deepEqual(await timeline(t, `/v1/jobs/${id}/timeline`), { id, kind: 'video', status: 'failed', charges, entries, truncated: false });
    const ats = entries.map((e) => e.at);
    assert.deepEqual(
      ats,
      [...ats].sort((a, b) => a - b),
      'entries in time order',
    );
    // The story, in order (entries between them, such as the provider cancels' answers, may differ by timing).
    const story = [
      ['created', { price }],
      ['charged', { amount: price }],
      ['started', { provider: 'fal' }],
      ['submitted', { provider: 'fal' }],
      ['provider_gave_up', { provider: 'fal' }],
      ['failover', { from: 'fal', to: 'xai' }],
      ['submitted', { provider: 'xai' }],
      ['cancel_requested', {}],
      ['refunded', { amount: price - kept, kept, cause: 'canceled' }],
      ['failed', { code: 'canceled', cancel_kept: kept }],
      // xAI documents no cancel: the customer's cancel asked it of the workflow, which says so.
      ['cancel_upstream', { provider: 'xai', outcome: 'not_cancellable', kept }],
    ] as const;
    let at = 0;
    for (const [type, details] of story) {
      const i = entries.findIndex((e, j) => j >= at && e.type === type && Object.entries(details).every(([k, v]) => e.details[k] === v));
      assert.ok(i >= 0, `${type} ${JSON.stringify(details)} after entry ${at} in ${JSON.stringify(entries.map((e) => [e.type, e.details]))}`);
      at = i + 1;
    }
    assert.match(String(entries.find((e) => e.type === 'provider_gave_up')!.details.error), /HTTP 502/);
    // The money on the timeline is the record's: charged minus refunded and recharged.
    const sum = (types: string[]) => entries.filter((e) => types.includes(e.type)).reduce((s, e) => s + Number(e.details.amount), 0);
    assert.deepEqual({ charged: sum(['charged', 'recharged']), refunded: sum(['refunded']) }, { charged: charges.charged, refunded: charges.refunded });
    xai.pendingPolls = 2;
  });

  test("a plain completed job's timeline; another workspace's job is 404", async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await createVideoOnFal(gw.baseUrl, t, model, '[receipt-plain]');
    const row = await jobFinished(tdb.db, id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    const { charges, entries } = await timeline(t, `/v1/videos/${id}/timeline`);
    assert.deepEqual(charges, { charged: price, refunded: 0, net: price });
    assert.deepEqual(charges, await ledgerSums(id));
    assert.deepEqual(
      entries.map((e) => [e.type, e.details]),
      [
        ['created', { model, provider: 'fal', price, priority: 'normal' }],
        ['charged', { amount: price }],
        ['started', { provider: 'fal', revived: false }],
        ['submitted', { provider: 'fal', provider_model_id: entries[3]!.details.provider_model_id, attempt: entries[3]!.details.attempt }],
        ['outputs_stored', { count: 1 }],
        ['completed', { provider: 'fal' }],
      ],
    );
    // The clients read the same: the TypeScript client, and the CLI as JSON and as a table.
    const data = await timeline(t, `/v1/jobs/${id}/timeline`);
    assert.deepEqual(await new MediaGenClient({ apiKey: t.apiKey, baseUrl: gw.baseUrl }).jobs.timeline(id), data);
    const json = await mediagen(t, ['jobs', 'timeline', id, '--json']);
    assert.equal(json.code, 0);
    assert.deepEqual(JSON.parse(json.stdout), data);
    const human = await mediagen(t, ['jobs', 'timeline', id]);
    assert.equal(human.code, 0);
    const lines = human.stdout.trim().split('\n');
    assert.equal(lines[0], `${id}  completed · charged ${price} · refunded 0 · net ${price}`);
    assert.match(lines[1]!, /^time\s+event\s+credits\s+details$/);
    assert.deepEqual(
      lines.slice(2).map((l) => l.split(/\s+/)[1]),
      entries.map((e) => e.type),
    );
    assert.match(lines[3]!, new RegExp(`charged\\s+-${price}`));

    const other = await createTenant(tdb.db, 10);
    for (const path of [`/v1/videos/${id}/timeline`, `/v1/jobs/${id}/timeline`]) {
      const r = await api(gw.baseUrl, other.apiKey).get(path);
      assert.equal(r.status, 404, r.text);
      assert.equal(r.body.error.code, 'not_found');
    }
    assert.equal((await api(gw.baseUrl, t.apiKey).get(`/v1/images/${id}/timeline`)).status, 404, 'another kind’s path');
  });
});
