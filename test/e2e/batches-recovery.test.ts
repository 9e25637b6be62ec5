// A batch survives the loss of the process running it, on the real stack over HTTP (gateway,
// Temporal, Postgres, MinIO, fal's fake speaking its queue protocol): kill -9 of the worker process
// that runs the batch's parent workflow, its items' job workflows and their fal calls, while the
// batch is part started, part waiting; a new worker process takes over and the batch completes,
// every item submitted to fal once and charged once, no item given a second job, and the manifest
// lists every item with its job.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, waitFor, type Tenant } from '../support/stack.js';
import { api, creditsOf } from '../support/services.js';
import { falRequestsWith, spawnWorkerProcess, startFailoverStack, type FailoverStack, type WorkerProcess } from '../support/failover-stack.js';
import { ledgerCharges } from '../support/ledger.js';

const ITEMS = 16;

let stack: FailoverStack;

before(async () => {
  // No in-process workers: the test's worker processes run everything. Items start one a second (the
  // lowest rate), so the kill finds some started and some still waiting, and can land between two submits.
  stack = await startFailoverStack({ roles: '', env: { BATCH_START_PER_SECOND: '1' } });
});

after(async () => {
  await stack?.close();
});

async function batchOf(t: Tenant, id: string) {
  const r = await api(stack.gw.baseUrl, t.apiKey).get(`/v1/batches/${id}`);
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

test('kill -9 of the worker mid-batch: a new worker finishes it, each item submitted once and charged once', { timeout: 360_000 }, async () => {
  const t = await createTenant(stack.tdb.db, 10_000);
  const before = await creditsOf(stack.tdb.db, t);
  const marker = `[batch-kill-${t.workspaceId}]`;
  // Each item's prompt ends in its own `#i.`, so fal's requests are counted per item.
  const itemPrompt = (i: number) => `a lighthouse ${marker} #${i}.`;
  const items = Array.from({ length: ITEMS }, (_, i) => ({
    custom_id: `k-${i}`,
    kind: 'image',
    body: { prompt: itemPrompt(i), model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 },
  }));
  let first: WorkerProcess | undefined;
  let second: WorkerProcess | undefined;
  try {
    first = await spawnWorkerProcess(stack, 'workflows,io,fetch,provider:fal');
    const created = await api(stack.gw.baseUrl, t.apiKey).post('/v1/batches', { project_id: t.projectId, items });
    assert.equal(created.status, 200, created.text);
    const id = created.body.data.id as string;
    // The kill lands once three items are at fal with their references recorded, and none is between
    // fal's accept and its reference reaching the job row: a worker killed inside that window never
    // learned the reference, and its successor submits again (worker-restarts covers the window as
    // far as a worker can: the reference in the step's heartbeat before the row).
    const recorded = async () =>
      Number(
        (
          await stack.tdb.db
            .selectFrom('jobs')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .where('workspace_id', '=', t.workspaceId)
            .where('provider_ref', 'is not', null)
            .executeTakeFirstOrThrow()
        ).n,
      );
    await waitFor(
      'three items at fal, each reference recorded',
      async () => {
        const submitted = falRequestsWith(stack.fal, 'submit', marker);
        return submitted >= 3 && (await recorded()) === submitted ? true : undefined;
      },
      120_000,
      20,
    );
    first.child.kill('SIGKILL');
    await first.exited;
    const midway = await batchOf(t, id);
    assert.ok(midway.counts.waiting > 0, `items still waiting at the kill: ${JSON.stringify(midway.counts)}`);

    second = await spawnWorkerProcess(stack, 'workflows,io,fetch,provider:fal');
    const done = await waitFor(
      `batch ${id} to end`,
      async () => {
        const b = await batchOf(t, id);
        return b.status !== 'running' ? b : undefined;
      },
      240_000,
      250,
    );
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.equal(done.counts.completed, ITEMS, JSON.stringify(done.counts));

    for (let i = 0; i < ITEMS; i++) assert.equal(falRequestsWith(stack.fal, 'submit', itemPrompt(i)), 1, `item ${i} submitted to fal once`);
    const jobs = await stack.tdb.db.selectFrom('jobs').select(['id', 'price', 'status']).where('workspace_id', '=', t.workspaceId).execute();
    assert.equal(jobs.length, ITEMS, 'one job per item, none started twice');
    for (const job of jobs) assert.deepEqual(await ledgerCharges(stack.tdb.db, job.id), { charged: job.price, refunded: 0, net: job.price }, job.id);
    const charged = jobs.reduce((n, j) => n + j.price, 0);
    assert.equal(done.charged, charged);
    assert.equal(before - (await creditsOf(stack.tdb.db, t)), charged, 'the batch was paid once');

    const manifest = await api(stack.gw.baseUrl, t.apiKey).get(`/v1/batches/${id}/manifest`);
    assert.equal(manifest.status, 200, manifest.text);
    assert.deepEqual(
      (manifest.body.data as { custom_id: string; job_id: string; status: string }[]).map((m) => [m.custom_id, m.status]),
      items.map((item) => [item.custom_id, 'completed']),
    );
    assert.deepEqual(new Set((manifest.body.data as { job_id: string }[]).map((m) => m.job_id)), new Set(jobs.map((j) => j.id)));
  } finally {
    for (const p of [first, second]) if (p && p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all([first?.exited, second?.exited]);
  }
});
