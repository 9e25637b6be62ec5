// A provider is paid once per job: faults after the submit — a status 5xx, an object store 5xx, a
// failed progress write, a provider worker frozen past its heartbeat timeout, a provider worker
// killed with SIGKILL — each end with the job completed and exactly one submit at the provider
// (the local fal queue, speaking fal's protocol, counts them); a customer's cancel after the submit
// ends with exactly one provider cancel, after the refund (of all but fal's cost, which a request fal
// was running keeps). The pipeline runs on the real stack: the
// gateway over HTTP, workflows on Temporal, Postgres, and outputs stored in MinIO from a loopback
// HTTPS "CDN".
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startWorkers, type InProcessGateway as Gateway } from '../support/services.js';
import { falRequestsWith, spawnWorkerProcess, startFailoverStack, type FailoverStack } from '../support/failover-stack.js';
import { createImage, jobFinished, jobLedger, jobRow } from '../support/job-helpers.js';
import type { FakeFal } from '../support/fake-providers/fal.js';
import { json } from '../support/fake-providers/server.js';
import { indexOfLocalActivity } from '../support/history.js';
import { createStorage, type Storage } from '../../shared/storage.js';
import type { Config } from '../../shared/config.js';

let stack: FailoverStack;
let tdb: TestDatabase;
let fal: FakeFal;
let config: Config;
let gw: Gateway;

const price = 4; // nano-banana-2, one image

before(async () => {
  // The workflow worker (and the io and fetch queues) for every test; each test brings its provider fleet.
  stack = await startFailoverStack({ roles: 'workflows,io,fetch' });
  ({ tdb, fal, config, gw } = stack);
  // A progress write that fails once, in Postgres itself: the first move of a marked job to
  // storing_outputs raises (a sequence, so the one-shot survives the statement's rollback).
  await sql`create sequence progress_fault_seq`.execute(tdb.db);
  await sql`
    create function fail_progress_once() returns trigger language plpgsql as $$
    begin
      if new.phase = 'storing_outputs' and old.phase is distinct from 'storing_outputs'
         and new.params->>'prompt' like '%[progress-fault]%' and nextval('progress_fault_seq') = 1 then
        raise exception 'injected: the progress write failed';
      end if;
      return new;
    end $$`.execute(tdb.db);
  await sql`create trigger fail_progress_once before update on jobs for each row execute function fail_progress_once()`.execute(tdb.db);
});

after(() => stack?.close());

/** Requests of `op` at the fake that belong to the job with this prompt marker. */
const requestsFor = (op: 'submit' | 'status' | 'cancel', marker: string) => falRequestsWith(fal, op, marker);

const create = (t: Tenant, marker: string) => createImage(gw.baseUrl, t, `a lighthouse ${marker}`);

const rowOf = (id: string) => jobRow(tdb.db, id);
// A frozen worker's long polls stay open on the server for up to a minute: a retried step handed to
// one of them is lost again until its 30 s heartbeat timeout, so a job may take three of those
// before another worker runs it. The wait covers that with room for a loaded machine.
const finished = (id: string) => jobFinished(tdb.db, id, 180_000);

/** Completed, with its one output in MinIO, and charged its price exactly once. */
async function assertCompletedOnce(t: Tenant, id: string, marker: string): Promise<void> {
  const row = await finished(id);
  assert.equal(row.status, 'completed', JSON.stringify(row.error));
  assert.equal(row.outputs?.length, 1);
  assert.equal(requestsFor('submit', marker), 1, 'exactly one submit at the provider');
  assert.deepEqual(await jobLedger(tdb.db, id), [['charge', -price]]);
  assert.equal(await creditsOf(tdb.db, t), 100 - price);
}

/** The storage of a provider fleet whose object store answers one PUT of a job output with a 500. */
function storageFailingOnePut(marker: { jobId?: string }): Storage {
  const storage = createStorage(config);
  let failed = false;
  return {
    ...storage,
    async putStream(key, ...rest) {
      if (!failed && marker.jobId && key.includes(marker.jobId) && /output-/.test(key)) {
        failed = true;
        throw Object.assign(new Error('We encountered an internal error, please try again.'), { code: 'InternalError', statusCode: 500 });
      }
      return storage.putStream(key, ...rest);
    },
  };
}

async function withProviderFleet<T>(opts: { storage?: Storage }, fn: () => Promise<T>): Promise<T> {
  const fleet = await startWorkers(config, tdb.db, 'provider:fal', opts);
  try {
    return await fn();
  } finally {
    await fleet.stop();
  }
}

describe('a provider is paid once per job, whatever fails after the submit', () => {
  test('a status answer of 502 right after the submit: the retried step polls the recorded request', async () => {
    fal.flow = ['COMPLETED'];
    const t = await createTenant(tdb.db, 100);
    const marker = '[status-5xx]';
    fal.script('status', json(502, { detail: 'Bad Gateway' }));
    await withProviderFleet({}, async () => {
      const id = await create(t, marker);
      await assertCompletedOnce(t, id, marker);
      assert.ok(requestsFor('status', marker) >= 2, 'the status was asked again');
    });
  });

  test('the object store answers 500 while the outputs are stored: the retried step stores them without a second submit', async () => {
    fal.flow = ['COMPLETED'];
    const t = await createTenant(tdb.db, 100);
    const marker = '[storage-5xx]';
    const target: { jobId?: string } = {};
    const storage = storageFailingOnePut(target);
    await withProviderFleet({ storage }, async () => {
      const id = await create(t, marker);
      target.jobId = id;
      await assertCompletedOnce(t, id, marker);
    });
    // The failing PUT happened: the result was fetched once per attempt.
    assert.ok(requestsFor('status', marker) >= 2, 'the step ran again after the failed PUT');
  });

  test('a progress write that fails does not fail the step: one submit, one status check', async () => {
    fal.flow = ['COMPLETED'];
    const t = await createTenant(tdb.db, 100);
    const marker = '[progress-fault]';
    await withProviderFleet({}, async () => {
      const id = await create(t, marker);
      await assertCompletedOnce(t, id, marker);
    });
    const { rows } = await sql<{ last_value: string; is_called: boolean }>`select last_value, is_called from progress_fault_seq`.execute(tdb.db);
    assert.ok(rows[0]!.is_called, 'the injected failure fired');
    assert.equal(requestsFor('status', marker), 1, 'the step was not repeated');
  });

  for (const fault of ['frozen past its heartbeat timeout (SIGSTOP)', 'killed (SIGKILL)'] as const) {
    test(`the provider worker is ${fault} after the submit: another worker polls the recorded request`, async () => {
      fal.flow = ['COMPLETED'];
      const t = await createTenant(tdb.db, 100);
      const marker = fault.includes('SIGSTOP') ? '[frozen]' : '[killed]';
      // The first status check hangs, so the step is in flight after the submit when the worker goes.
      fal.script('status', { ...json(202, { status: 'IN_QUEUE' }), delayMs: 45_000 });
      const first = await spawnWorkerProcess(stack, 'provider:fal');
      try {
        const id = await create(t, marker);
        await waitFor(
          'the submit and the first status check',
          async () => ((await rowOf(id)).provider_ref && requestsFor('status', marker) >= 1 ? true : undefined),
          60_000,
          100,
        );
        first.child.kill(fault.includes('SIGSTOP') ? 'SIGSTOP' : 'SIGKILL');
        await withProviderFleet({}, async () => {
          await assertCompletedOnce(t, id, marker);
        });
      } finally {
        first.child.kill('SIGKILL');
        await first.exited;
      }
    });
  }

  test("a customer's cancel after the submit: refunded first, then exactly one provider cancel", async () => {
    fal.flow = [...Array<'IN_PROGRESS'>(200).fill('IN_PROGRESS'), 'COMPLETED'];
    const t = await createTenant(tdb.db, 100);
    const marker = '[canceled]';
    await withProviderFleet({}, async () => {
      const id = await create(t, marker);
      await waitFor('the request to be recorded', async () => ((await rowOf(id)).provider_ref ? true : undefined), 60_000, 100);
      const r = await api(gw.baseUrl, t.apiKey).post(`/v1/images/${id}/cancel`, {});
      assert.equal(r.status, 200, r.text);
      const row = await finished(id);
      assert.equal(row.status, 'failed');
      assert.equal(row.error?.code, 'canceled');
      const handle = gw.client.workflow.getHandle(id);
      await waitFor('the workflow to close', async () => ((await handle.describe()).status.name !== 'RUNNING' ? true : undefined), 60_000, 200);
      assert.equal(requestsFor('cancel', marker), 1, 'exactly one provider cancel');
      assert.equal(requestsFor('submit', marker), 1);
      // Refunded but fal's cost: fal was running the request, so its 202 to the cancel only signals the
      // runner and confirms nothing.
      assert.deepEqual(await jobLedger(tdb.db, id), [
        ['charge', -price],
        ['refund', 1],
      ]);
      assert.equal(await creditsOf(tdb.db, t), 100 - 3);
      // The refund is in the history before the provider cancel.
      const events = (await handle.fetchHistory()).events ?? [];
      const refundAt = indexOfLocalActivity(events, 'failJob');
      const cancelAt = events.findIndex((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'cancelProvider');
      assert.ok(refundAt >= 0 && cancelAt > refundAt, `failJob (${refundAt}) before cancelProvider (${cancelAt})`);
    });
  });
});
