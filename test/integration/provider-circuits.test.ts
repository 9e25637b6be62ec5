// Failover's Postgres side on the real database: the job service moves a job between its routes for
// the run that holds it, once (a repeated step records nothing twice), and forgets the given-up
// route's request for its cancel (stored with the attempt, so a repeated step still answers it); the
// circuit breaker opens on the failure rate, lets exactly one half-open trial through across
// concurrent workers, closes only when that trial completes, and counts each job's outcome once.
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTenant, createTestDatabase, type TestDatabase } from '../support/stack.js';
import { newId } from '../../shared/ids.js';
import * as jobs from '../../db/repos/jobs.js';
import { createJobService, IllegalStatusMoveError } from '../../jobs/index.js';
import { createProviderCircuits, type CircuitPolicy } from '../../db/provider-circuits.js';
import { createStorage } from '../../shared/storage.js';
import { testConfig } from '../support/stack.js';

let tdb: TestDatabase;
const policy: CircuitPolicy = { windowMs: 60_000, minAttempts: 2, failurePercent: 50, openMs: 60_000, trialMs: 600_000 };
const model = 'grok-video';
const routes = [
  { provider: 'fal', provider_model_id: 'xai/grok-imagine-video/text-to-video' },
  { provider: 'xai', provider_model_id: 'grok-imagine-video' },
];

before(async () => {
  tdb = await createTestDatabase();
});
after(async () => {
  await tdb?.drop();
});
beforeEach(async () => {
  await tdb.db.deleteFrom('provider_circuits').execute();
});

const service = () => createJobService({ db: tdb.db, storage: createStorage(testConfig(tdb.url)), circuits: createProviderCircuits(tdb.db, policy) });

/** A grok-video job with both routes, claimed by `runId`, its fal request recorded. */
async function jobOnFal(runId: string): Promise<string> {
  const t = await createTenant(tdb.db, 100);
  const id = newId('vid');
  const params = {
    prompt: 'p',
    aspect_ratio: '16:9',
    duration: 1,
    resolution: '480p',
    provider: 'fal',
    provider_model_id: routes[0]!.provider_model_id,
    deadline_seconds: 600,
    routes,
  };
  await tdb.db
    .transaction()
    .execute((tx) =>
      jobs.insertJobWithCharge(tx, { id, kind: 'video', workspaceId: t.workspaceId, projectId: t.projectId, apiKeyId: t.apiKeyId, model, params, price: 6 }),
    );
  await service().claim(id, runId);
  assert.ok(await jobs.recordProviderRef(tdb.db, id, runId, { provider: 'fal', requestId: 'fal-1' }));
  return id;
}

const circuitOf = (provider: string) =>
  tdb.db.selectFrom('provider_circuits').selectAll().where('provider', '=', provider).where('model', '=', model).executeTakeFirst();

describe('moving a job between its routes', () => {
  test('a give-up moves the job to the next route once, answering the request to cancel', async () => {
    const id = await jobOnFal('run-a');
    const gaveUp = { provider: 'fal' as const, error: 'fal status: provider error (HTTP 502) (5 attempts)' };
    const first = await service().routeJob(id, 'run-a', gaveUp, 1);
    assert.deepEqual(first, { route: routes[1], previousRef: { provider: 'fal', requestId: 'fal-1' } });
    // The step repeated after its commit (a lost answer): nothing recorded twice, and the same
    // answer, so the retried step still cancels the given-up request.
    const again = await service().routeJob(id, 'run-a', gaveUp, 2);
    assert.deepEqual(again, first);
    const row = (await jobs.getJob(tdb.db, id))!;
    assert.equal(row.params.provider, 'xai');
    assert.equal(row.params.provider_model_id, 'grok-imagine-video');
    assert.equal(row.provider_ref, null, "fal's request is forgotten: the next submit goes to xAI");
    assert.deepEqual(row.provider_attempts, [{ ...gaveUp, ref: { provider: 'fal', requestId: 'fal-1' } }]);
    assert.equal((await circuitOf('fal'))?.failures, 1, 'the breaker counted the failure once');
  });

  test('another run cannot move the job; no route after the last one', async () => {
    const id = await jobOnFal('run-a');
    await assert.rejects(service().routeJob(id, 'run-b', { provider: 'fal', error: 'x' }, 1), IllegalStatusMoveError);
    await service().routeJob(id, 'run-a', { provider: 'fal', error: 'fal down' }, 1);
    assert.ok(await jobs.recordProviderRef(tdb.db, id, 'run-a', { provider: 'xai', requestId: 'xai-1' }));
    const last = await service().routeJob(id, 'run-a', { provider: 'xai', error: 'xai down' }, 1);
    assert.deepEqual(last, { route: null, previousRef: { provider: 'xai', requestId: 'xai-1' } });
    assert.deepEqual(
      await service().routeJob(id, 'run-a', { provider: 'xai', error: 'xai down' }, 2),
      last,
      'repeated: still no route, the same request to cancel',
    );
    assert.deepEqual(
      (await jobs.getJob(tdb.db, id))!.provider_attempts.map((a) => a.provider),
      ['fal', 'xai'],
    );
  });

  test('at the start, an open route is skipped for the next one', async () => {
    const circuits = createProviderCircuits(tdb.db, policy);
    await circuits.record('fal', model, { ok: false, error: 'down' });
    assert.equal(await circuits.record('fal', model, { ok: false, error: 'down' }), 'open');
    const id = await jobOnFal('run-a');
    const start = await service().routeJob(id, 'run-a', undefined, 1);
    assert.deepEqual(start.route, routes[1]);
    assert.equal((await jobs.getJob(tdb.db, id))!.provider_attempts.length, 0, 'a skipped route is not an attempt');
  });
});

describe('the circuit breaker, shared through Postgres', () => {
  /** The fal breaker opened by two failures, its open period over. */
  async function openedLongAgo() {
    const circuits = createProviderCircuits(tdb.db, policy);
    await circuits.record('fal', model, { ok: false });
    await circuits.record('fal', model, { ok: false });
    assert.equal(await circuits.admit('fal', model, 'vid_refused'), false, 'open: new jobs skip the route');
    await sql`update provider_circuits set opened_at = now() - interval '2 minutes'`.execute(tdb.db);
    return circuits;
  }

  test('exactly one half-open trial among concurrent workers, named by its job; only its completing closes it', async () => {
    const early = await jobOnFal('run-early');
    const circuits = await openedLongAgo();
    const tokens = await Promise.all(Array.from({ length: 8 }, (_, i) => jobOnFal(`run-${i}`)));
    const answers = await Promise.all(tokens.map((t) => createProviderCircuits(tdb.db, policy).admit('fal', model, t)));
    assert.equal(answers.filter(Boolean).length, 1, 'one trial for the fleet');
    const trial = tokens[answers.indexOf(true)]!;
    assert.equal((await circuitOf('fal'))?.trial_token, trial);
    assert.equal(await circuits.admit('fal', model, trial), true, 'the trial asking again (a retried step) is still the trial');
    assert.equal(await circuits.admit('fal', model, 'vid_next'), false, 'no second trial while the first runs');
    // A job admitted before the breaker opened completes: counted, but it is not the trial.
    assert.equal(await circuits.record('fal', model, { ok: true, jobId: early }), 'half_open');
    assert.equal(await circuits.record('fal', model, { ok: true, jobId: trial }), 'closed');
    assert.equal(await circuits.admit('fal', model, 'vid_after'), true);
  });

  test('a trial that never ends lets the next one through only after the trial period', async () => {
    const [stuck, next] = [await jobOnFal('run-stuck'), await jobOnFal('run-next')];
    const circuits = await openedLongAgo();
    assert.equal(await circuits.admit('fal', model, stuck), true);
    await sql`update provider_circuits set trial_at = now() - interval '5 minutes'`.execute(tdb.db);
    assert.equal(await circuits.admit('fal', model, next), false, 'a video trial may run for minutes (trialMs 10 min)');
    await sql`update provider_circuits set trial_at = now() - interval '11 minutes'`.execute(tdb.db);
    assert.equal(await circuits.admit('fal', model, next), true);
    assert.equal(await circuits.record('fal', model, { ok: true, jobId: stuck }), 'half_open', 'the stale trial no longer decides');
    assert.equal(await circuits.record('fal', model, { ok: false, jobId: next, error: 'down' }), 'open');
  });

  test('a job completing on a route is counted once, however often its completeJob step runs', async () => {
    const id = await jobOnFal('run-a');
    const svc = service();
    const outputs = [{ key: `jobs/${id}/output-0.mp4`, content_type: 'video/mp4', size: 1 }];
    // completeJob's two writes, run twice (a retry after the first attempt committed both).
    for (let i = 0; i < 2; i++) {
      const job = await svc.complete(id, outputs, 'run-a', { attempt: i + 1 });
      await svc.routeSucceeded(job);
    }
    const row = await circuitOf('fal');
    assert.deepEqual([row?.attempts, row?.failures], [1, 0]);
  });
});
