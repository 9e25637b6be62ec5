// A job waits for its provider inside awaitProvider steps (activities/jobs/await.ts): fal's queue
// is polled from the worker, and the workflow hears only news. On the real stack (gateway over HTTP,
// Temporal, Postgres, MinIO) with the fake fal queue: a request that stays in progress for several
// polls costs one wait step, no timer, and one check that stores its outputs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, type TestDatabase } from '../support/stack.js';
import { startService, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { createVideoOnFal, jobFinished } from '../support/job-helpers.js';

let suite: Service;
let tdb: TestDatabase;
let live: LiveFal;
let gw: Gateway;

before(async () => {
  live = await startLiveFal();
  suite = await startService(
    { ...live.env, RATE_LIMIT_GENERATE_PER_MIN: '1000', RATE_LIMIT_POLL_PER_MIN: '100000', RECONCILE_INTERVAL_MS: '3600000' },
    { roles: 'workflows,io,fetch,provider:fal' },
  );
  ({ tdb, gw } = suite);
});

after(async () => {
  await suite?.close();
  await live?.close();
});

describe('provider waits', () => {
  test('polls that change nothing the job shows happen inside one wait step: no timer, one step per piece of news', async () => {
    // Queued at the submit's check, then in progress (the same percent) for four polls, then done.
    live.fal.flow = ['IN_QUEUE', 'IN_PROGRESS', 'IN_PROGRESS', 'IN_PROGRESS', 'IN_PROGRESS', 'COMPLETED'];
    const t = await createTenant(tdb.db, 1000);
    const id = await createVideoOnFal(gw.baseUrl, t, 'grok-video', '[waits]');
    const row = await jobFinished(tdb.db, id, 120_000);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));

    const events = (await gw.client.workflow.getHandle(id).fetchHistory()).events ?? [];
    const steps = events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType!.name!] : []));
    // One wait until fal's request left its queue (news: running), one until it was done; then the storing check.
    assert.deepEqual(steps, ['submitAndCheck', 'awaitProvider', 'awaitProvider', 'checkProvider']);
    assert.equal(events.filter((e) => e.timerStartedEventAttributes).length, 0, 'no workflow timer between polls');
    // Every poll reached fal: the submit's check, five from the waits (the three unchanged ones among them), the storing check's.
    assert.equal(live.fal.requestsOf('status').length, 7);
  });
});
