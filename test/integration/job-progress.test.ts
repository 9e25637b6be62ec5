// Progress in the job row: the writes the activities make, their throttle, the `job_events`
// notification on every change, and the status endpoint answering from Postgres alone (its
// Temporal client points nowhere, so a query would time out instead).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { Client, Connection } from '@temporalio/client';
import { pino } from 'pino';
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createTestDatabase, createTenant, insertImageJob, testConfig, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import * as jobsRepo from '../../db/repos/jobs.js';
// The job service's status moves, in a transaction of the test's own.
import * as jobMoves from '../../jobs/index.js';
import * as progressRepo from '../../db/repos/job-progress.js';
import { createApp } from '../../api/app.js';
import { createStorage } from '../../shared/storage.js';
import { call } from './gateway-harness.js';

describe('job progress in Postgres', () => {
  let tdb: TestDatabase;
  let t: Tenant;

  before(async () => {
    tdb = await createTestDatabase();
    t = await createTenant(tdb.db, 1000);
  });
  after(async () => {
    await tdb?.drop();
  });

  async function newJob(): Promise<string> {
    return (await insertImageJob(tdb.db, t, { deadlineSeconds: 60 })).id;
  }

  const progressOf = async (id: string) => {
    const j = (await jobsRepo.getJob(tdb.db, id))!;
    return { phase: j.phase, percent: j.percent, queue_position: j.queue_position, attempt: j.attempt };
  };

  test('a new job is queued; a phase change resets percent and queue position', async () => {
    const id = await newJob();
    assert.deepEqual(await progressOf(id), { phase: 'queued', percent: null, queue_position: null, attempt: 1 });
    await progressRepo.setJobPhase(tdb.db, id, 'generating', 1);
    assert.equal(await progressRepo.recordPollProgress(tdb.db, id, { percent: null, queuePosition: 3, attempt: 1 }, 60_000), true);
    assert.deepEqual(await progressOf(id), { phase: 'generating', percent: null, queue_position: 3, attempt: 1 });
    await progressRepo.setJobPhase(tdb.db, id, 'storing_outputs', 2);
    assert.deepEqual(await progressOf(id), { phase: 'storing_outputs', percent: null, queue_position: null, attempt: 2 });
  });

  test('poll writes: only in the generating phase, only changes, at most once per interval, leaving the queue at once', async () => {
    const id = await newJob();
    assert.equal(
      await progressRepo.recordPollProgress(tdb.db, id, { percent: 5, queuePosition: null, attempt: 1 }, 60_000),
      false,
      'not before the provider wait',
    );
    await progressRepo.setJobPhase(tdb.db, id, 'generating', 1);
    assert.equal(await progressRepo.recordPollProgress(tdb.db, id, { percent: null, queuePosition: 4, attempt: 1 }, 60_000), true, 'the first figure');
    assert.equal(await progressRepo.recordPollProgress(tdb.db, id, { percent: null, queuePosition: 2, attempt: 1 }, 60_000), false, 'throttled');
    assert.equal(await progressRepo.recordPollProgress(tdb.db, id, { percent: 10, queuePosition: null, attempt: 1 }, 60_000), true, 'left the queue');
    assert.equal(await progressRepo.recordPollProgress(tdb.db, id, { percent: 20, queuePosition: null, attempt: 1 }, 60_000), false, 'throttled');
    assert.equal(await progressRepo.recordPollProgress(tdb.db, id, { percent: 20, queuePosition: null, attempt: 1 }, 0), true, 'interval over');
    assert.equal(await progressRepo.recordPollProgress(tdb.db, id, { percent: 20, queuePosition: null, attempt: 1 }, 0), false, 'unchanged');
    assert.equal(
      await progressRepo.recordPollProgress(tdb.db, id, { percent: null, queuePosition: null, attempt: 1 }, 0),
      false,
      'no percent keeps the last one',
    );
    assert.deepEqual(await progressOf(id), { phase: 'generating', percent: 20, queue_position: null, attempt: 1 });
  });

  test('every status or progress change notifies job_events with the job id; other updates do not', async () => {
    const listener = new pg.Client({ connectionString: tdb.url });
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (m) => m.channel === 'job_events' && heard.push(m.payload!));
    await listener.query('LISTEN job_events');
    try {
      const id = await newJob();
      await waitFor('the insert notification', () => heard.filter((h) => h === id).length === 1, 5_000, 10);
      await jobsRepo.markWorkflowStarted(tdb.db, id);
      await tdb.db.transaction().execute((tx) => jobMoves.claimJob(tx, id, 'run-1'));
      await waitFor('the status notification', () => heard.filter((h) => h === id).length === 2, 5_000, 10);
      await progressRepo.setJobPhase(tdb.db, id, 'generating', 1);
      await progressRepo.recordPollProgress(tdb.db, id, { percent: 40, queuePosition: null, attempt: 1 }, 0);
      await waitFor('the progress notifications', () => heard.filter((h) => h === id).length === 4, 5_000, 10);
      // A marker job changed after everything above: once its event arrives, nothing else came.
      const marker = await newJob();
      await waitFor('the marker', () => heard.includes(marker), 5_000, 10);
      assert.equal(heard.filter((h) => h === id).length, 4, 'workflow_started alone notifies nobody');
    } finally {
      await listener.end();
    }
  });

  test('GET status answers from Postgres alone: in-flight jobs carry the stored progress, finished ones none', async () => {
    // Temporal is unreachable for this gateway: any query would fail or time out.
    const config = testConfig(tdb.url, { HOST: '127.0.0.1', PROGRESS_QUERY_TIMEOUT_MS: '200' });
    const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1', connectTimeout: 100 }), namespace: 'default' });
    const app = createApp({ config, db: tdb.db, storage: createStorage(config), temporal, logger: pino({ level: 'silent' }) });
    const server = createServer(app.app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const id = await newJob();
      await jobsRepo.markWorkflowStarted(tdb.db, id);
      await tdb.db.transaction().execute((tx) => jobMoves.claimJob(tx, id, 'run-1'));
      // Submitted: the provider's reference recorded (a job still waiting in our queues answers its own position).
      assert.equal(await jobsRepo.recordProviderRef(tdb.db, id, 'run-1', { provider: 'local', id: 'r-1' }, { phase: 'generating', attempt: 1 }), true);
      await progressRepo.recordPollProgress(tdb.db, id, { percent: 42, queuePosition: null, attempt: 1 }, 0);
      const res = await call(base, 'GET', `/v1/images/${id}`, { key: t.apiKey });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.data.progress, { phase: 'generating', attempt: 1, percent: 42, queue_position: null });
      // ?live=true asks the workflow; when that fails the stored progress still answers.
      const live = await call(base, 'GET', `/v1/images/${id}?live=true`, { key: t.apiKey });
      assert.equal(live.status, 200, live.text);
      assert.deepEqual(live.body.data.progress, res.body.data.progress);
      const bad = await call(base, 'GET', `/v1/images/${id}?live=yes`, { key: t.apiKey });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.code, 'invalid_request');

      // A workspace's only waiting job is next in its share of the queue.
      const alone = await createTenant(tdb.db, 10);
      const pending = (await insertImageJob(tdb.db, alone, { deadlineSeconds: 60 })).id;
      const p = await call(base, 'GET', `/v1/images/${pending}`, { key: alone.apiKey });
      assert.deepEqual(p.body.data.progress, { phase: 'queued', attempt: 1, percent: null, queue_position: 1 });

      await tdb.db
        .transaction()
        .execute((tx) => jobMoves.completeJob(tx, id, [{ key: `jobs/${id}/output-1.png`, content_type: 'image/png', size: 1 }], 'run-1'));
      const done = await call(base, 'GET', `/v1/images/${id}`, { key: t.apiKey });
      assert.equal(done.body.data.status, 'completed');
      assert.equal(done.body.data.progress, undefined);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await app.close();
      await temporal.connection.close();
    }
  });
});
