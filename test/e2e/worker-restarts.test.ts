// A provider is paid once per job across worker restarts, on the real stack (the built worker as its
// own process for the provider queue, the workflow worker and gateway in-process, Postgres, Temporal
// and MinIO):
// - a deploy's SIGTERM during a 200 s synchronous Images API call (the local OpenAI fake answers a
//   generation after 200 s): the worker lets the call finish (its shutdown grace is the Images API's
//   600 s call timeout plus 30 s, activities/providers/call-timeouts.ts) while a new worker takes the
//   queue: one call, one charge;
// - kill -9 of the provider worker between fal accepting the submit and the reference reaching the
//   job row (the row held by a lock the test takes, the reference already in the step's heartbeat):
//   the next worker polls that request, one submit, one charge;
// - the same window with the worker frozen (SIGSTOP) instead, resumed after another worker took the
//   step over and completed the job: it submits nothing and writes nothing (row and stored output unchanged).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTenant, rawMinioClient, waitFor, type Tenant } from '../support/stack.js';
import { api, creditsOf, startWorkers } from '../support/services.js';
import { falRequestsWith, spawnWorkerProcess, startFailoverStack, type FailoverStack, type WorkerProcess } from '../support/failover-stack.js';
import { jobFinished, jobLedger, jobRow } from '../support/job-helpers.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-providers/openai.js';
import { testCodec } from '../support/codec.js';

let stack: FailoverStack;
let openai: FakeOpenAI;

before(async () => {
  openai = await startFakeOpenAI();
  // The workflow worker (and io, fetch) in-process; each test brings its provider workers.
  stack = await startFailoverStack({ roles: 'workflows,io,fetch', env: { OPENAI_API_KEY: openai.key, OPENAI_BASE_URL: openai.url } });
});

after(async () => {
  await stack?.close();
  await openai?.close();
});

async function stopped(p: WorkerProcess): Promise<void> {
  if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await p.exited;
}

/** Completed with one output, charged `price` exactly once. */
async function assertCompletedOnce(t: Tenant, id: string, price: number, timeoutMs = 180_000): Promise<void> {
  const row = await jobFinished(stack.tdb.db, id, timeoutMs);
  assert.equal(row.status, 'completed', JSON.stringify(row.error));
  assert.equal(row.outputs?.length, 1);
  assert.deepEqual(await jobLedger(stack.tdb.db, id), [['charge', -price]]);
  assert.equal(await creditsOf(stack.tdb.db, t), 100 - price);
}

describe('a worker restart never pays a provider twice', () => {
  test('SIGTERM during a 200 s synchronous Images API call: the old worker finishes the call, one call, one charge', { timeout: 600_000 }, async () => {
    const { tdb, gw } = stack;
    openai.generationMs = 200_000;
    const t = await createTenant(tdb.db, 100);
    const marker = '[sigterm-during-call]';
    const calls = () => openai.requestsOf('images').filter((r) => JSON.stringify(r.json).includes(marker)).length;
    const first = await spawnWorkerProcess(stack, 'provider:openai');
    let second: WorkerProcess | undefined;
    try {
      const r = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', {
        project_id: t.projectId,
        prompt: `a kite over the dunes ${marker}`,
        model: 'gpt-image-2',
        aspect_ratio: '1:1',
        count: 1,
      });
      assert.equal(r.status, 200, r.text);
      const id = r.body.data.id as string;
      assert.equal(r.body.data.provider, 'openai');
      await waitFor('the Images API call to be under way', () => (calls() === 1 ? true : undefined), 60_000, 100);
      const calledAt = Date.now();
      // A deploy: the running worker is told to stop, and a new one starts beside it.
      first.child.kill('SIGTERM');
      second = await spawnWorkerProcess(stack, 'provider:openai');
      const code = await first.exited;
      assert.equal(code, 0, `the old worker exits 0 once its call answered:\n${first.output().slice(-2000)}`);
      assert.ok(Date.now() - calledAt >= 190_000, 'the old worker stayed until the call answered');
      await assertCompletedOnce(t, id, 12, 120_000);
      assert.equal(calls(), 1, 'one Images API call');
      assert.equal(openai.generations, 1);
    } finally {
      openai.generationMs = 0;
      await stopped(first);
      if (second) await stopped(second);
    }
  });

  /**
   * Starts a fal job whose submit fal accepts but whose reference cannot reach the job row (a lock
   * the test holds), and waits until the provider worker's step carries the reference in its
   * heartbeat. Returns the job and a function that releases the row.
   */
  async function submitAcceptedNotRecorded(t: Tenant, marker: string): Promise<{ id: string; releaseRow: () => Promise<void> }> {
    const { tdb, gw, fal } = stack;
    let answerSubmit!: () => void;
    fal.holdAnswer('submit', new Promise<void>((r) => (answerSubmit = r)));
    const r = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: `a lighthouse ${marker}`,
      model: 'nano-banana-2',
      aspect_ratio: '1:1',
      count: 1,
    });
    assert.equal(r.status, 200, r.text);
    const id = r.body.data.id as string;
    await waitFor('fal to accept the submit', () => (falRequestsWith(fal, 'submit', marker) === 1 ? true : undefined), 60_000, 50);
    // The row is held before the worker hears of its request, so the reference cannot be recorded.
    let locked!: () => void;
    let unlock!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const unlocked = new Promise<void>((r) => (unlock = r));
    const holding = tdb.db
      .transaction()
      .execute(async (tx) => {
        await sql`select id from jobs where id = ${id} for update`.execute(tx);
        locked();
        await unlocked;
        throw new Error('rollback');
      })
      .catch(() => undefined);
    await isLocked;
    answerSubmit();
    const requestId = await waitFor(
      'the request id in the step heartbeat',
      async () => {
        const d = await gw.client.workflow.getHandle(id).describe();
        const sealed = d.raw.pendingActivities?.find((a) => a.activityType?.name === 'submitAndCheck')?.heartbeatDetails?.payloads?.[0];
        // Heartbeat details reach the server through the payload codec: open them as the worker does.
        const beat = sealed ? (await testCodec().decode([sealed]))[0]?.data : undefined;
        const text = beat ? Buffer.from(beat).toString('utf8') : '';
        return text.includes('"provider":"fal"') ? text : undefined;
      },
      90_000,
      200,
    );
    assert.equal((await jobRow(tdb.db, id)).provider_ref, null, 'the reference is not on the row yet');
    assert.ok(requestId);
    return {
      id,
      releaseRow: async () => {
        unlock();
        await holding;
      },
    };
  }

  test('kill -9 between fal accepting the submit and the reference reaching the row: the next worker polls that request, one submit, one charge', async () => {
    const { fal, tdb, config } = stack;
    fal.flow = ['COMPLETED'];
    const t = await createTenant(tdb.db, 100);
    const marker = '[killed-before-record]';
    const first = await spawnWorkerProcess(stack, 'provider:fal');
    try {
      const { id, releaseRow } = await submitAcceptedNotRecorded(t, marker);
      first.child.kill('SIGKILL');
      await first.exited;
      await releaseRow();
      const fleet = await startWorkers(config, tdb.db, 'provider:fal');
      try {
        await assertCompletedOnce(t, id, 4);
        assert.equal(falRequestsWith(fal, 'submit', marker), 1, 'one submit at fal');
        assert.equal(falRequestsWith(fal, 'cancel', marker), 0);
      } finally {
        await fleet.stop();
      }
    } finally {
      await stopped(first);
    }
  });

  test('a worker frozen (SIGSTOP) in the same window and resumed after another completed the job submits and writes nothing', async () => {
    const { fal, tdb, config } = stack;
    fal.flow = ['COMPLETED'];
    const t = await createTenant(tdb.db, 100);
    const marker = '[frozen-before-record]';
    const first = await spawnWorkerProcess(stack, 'provider:fal');
    try {
      const { id, releaseRow } = await submitAcceptedNotRecorded(t, marker);
      first.child.kill('SIGSTOP');
      await releaseRow();
      const fleet = await startWorkers(config, tdb.db, 'provider:fal');
      try {
        await assertCompletedOnce(t, id, 4);
      } finally {
        await fleet.stop();
      }
      const done = await jobRow(tdb.db, id);
      const key = done.outputs![0]!.key;
      const minio = rawMinioClient(config);
      const storedBefore = await minio.statObject(config.S3_BUCKET, key);
      const checksBefore = falRequestsWith(fal, 'status', marker);
      first.child.kill('SIGCONT');
      // The resumed step goes on from where it froze: at most a status read at fal (never paid),
      // then it finds the job ended and stops. Stopping the worker waits for that step to end.
      first.child.kill('SIGTERM');
      assert.equal(await first.exited, 0, first.output().slice(-2000));
      assert.ok(falRequestsWith(fal, 'status', marker) <= checksBefore + 1, 'at most one more status read');
      assert.equal(falRequestsWith(fal, 'submit', marker), 1, 'no second submit');
      const after = await jobRow(tdb.db, id);
      assert.deepEqual(
        [after.status, after.phase, after.updated_at, after.progress_updated_at, after.outputs, after.provider_ref],
        [done.status, done.phase, done.updated_at, done.progress_updated_at, done.outputs, done.provider_ref],
        'the row is as the completing worker left it',
      );
      const storedAfter = await minio.statObject(config.S3_BUCKET, key);
      assert.deepEqual([storedAfter.etag, storedAfter.lastModified], [storedBefore.etag, storedBefore.lastModified], 'the output was not written again');
      assert.deepEqual(await jobLedger(tdb.db, id), [['charge', -4]]);
    } finally {
      first.child.kill('SIGCONT');
      await stopped(first);
    }
  });
});
