// Chaos during a failover, on the real stack: grok-video's first route (the fake fal queue) refuses
// every call, so the job moves to xAI; the xAI provider worker — the built worker as its own process —
// is killed with SIGKILL right after it submitted there. Another xAI worker takes the step over, finds
// the request the first one recorded and polls it: one submit at xAI, the job completed and charged
// its price once, fal's refusals counted against its breaker.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, waitFor } from '../support/stack.js';
import { api, creditsOf, startWorkers } from '../support/services.js';
import { spawnWorkerProcess, startFailoverStack, submitsWith, type FailoverStack } from '../support/failover-stack.js';
import { jobFinished, jobLedger, jobRow } from '../support/job-helpers.js';
import { json } from '../support/fake-providers/server.js';

let stack: FailoverStack<'xai'>;

before(async () => {
  // Every role but xAI's: the test brings that fleet.
  stack = await startFailoverStack({ secondary: 'xai', roles: 'workflows,io,fetch,provider:fal' });
});

after(() => stack?.close());

test('the xAI worker is killed (SIGKILL) right after the failover submit: another one polls the recorded request, one submit, charged once', async () => {
  const { tdb, fal, secondary: xai, config, gw } = stack;
  fal.down(['submit', 'status', 'result', 'cancel'], json(503, { detail: 'Service Unavailable' }));
  // The first status check at xAI hangs, so the step is in flight after the submit when the worker goes.
  xai.script('status', { status: 202, delayMs: 45_000 });
  const t = await createTenant(tdb.db, 100);
  const marker = '[killed-during-failover]';
  const first = await spawnWorkerProcess(stack, 'provider:xai');
  try {
    const r = await api(gw.baseUrl, t.apiKey).post('/v1/videos/generate', {
      project_id: t.projectId,
      prompt: `a lighthouse ${marker}`,
      model: 'grok-video',
      aspect_ratio: '16:9',
      duration: 1,
      resolution: '480p',
    });
    assert.equal(r.status, 200, r.text);
    const id = r.body.data.id as string;
    const rowOf = () => jobRow(tdb.db, id);
    await waitFor(
      'the failover submit at xAI and its first status check',
      async () => {
        const row = await rowOf();
        return (row.provider_ref as { provider?: string } | null)?.provider === 'xai' && xai.requestsOf('status').length >= 1 ? true : undefined;
      },
      120_000,
      100,
    );
    first.child.kill('SIGKILL');
    await first.exited;
    const fleet = await startWorkers(config, tdb.db, 'provider:xai');
    try {
      const row = await jobFinished(tdb.db, id);
      assert.equal(row.status, 'completed', JSON.stringify(row.error));
      assert.equal(submitsWith(xai, marker), 1, 'one submit at xAI');
      assert.deepEqual(
        row.provider_attempts.map((a) => a.provider),
        ['fal'],
      );
      assert.deepEqual(await jobLedger(tdb.db, id), [['charge', -6]]);
      assert.equal(await creditsOf(tdb.db, t), 100 - 6);
    } finally {
      await fleet.stop();
    }
  } finally {
    first.child.kill('SIGKILL');
    await first.exited;
    fal.up();
  }
});
