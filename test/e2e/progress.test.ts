// The stored progress is the workflow's own: while a job waits on the (slowed) local renderer, the
// status endpoint's Postgres answer agrees with the workflow's `progress` query within one provider
// poll, and `?live=true` answers with the query's figures.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, waitFor } from '../support/stack.js';
import { api, startService, waitForJobStatus, type Service } from '../support/services.js';
import { queryJobProgress } from '../../workflows/client.js';

let svc: Service;

before(async () => {
  svc = await startService({
    LOCAL_RENDER_LATENCY_MS: '8000',
    // Every changed poll is written, so "within one poll" is what the test can hold it to.
    PROGRESS_WRITE_INTERVAL_MS: '0',
    RATE_LIMIT_POLL_PER_MIN: '100000',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
  });
});
after(async () => {
  await svc?.close();
});

describe('stored progress', () => {
  test("agrees with the workflow's progress query within one provider poll, and ?live=true returns the query's", async () => {
    const t = await createTenant(svc.tdb.db, 100);
    const c = api(svc.gw.baseUrl, t.apiKey);
    const created = await c.post('/v1/images/generate', { project_id: t.projectId, prompt: 'progress', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
    assert.equal(created.status, 200, created.text);
    const id = created.body.data.id as string;
    // null when the query did not answer within 5 s (a loaded machine): that reading says nothing, so it is taken again.
    const query = () => queryJobProgress(svc.gw.client, id, 5_000);

    await waitFor('the provider wait', async () => (await query())?.phase === 'generating', 60_000, 50);
    // Percents the query reported, in order (the local renderer's percent only grows).
    const seen: number[] = [];
    let compared = 0;
    for (;;) {
      const before = await query();
      const stored = (await c.get(`/v1/images/${id}`)).body.data;
      const afterQ = await query();
      if (stored.status !== 'generating') break;
      if (!before || !afterQ) continue;
      if (before.phase !== 'generating' || afterQ.phase !== 'generating') break;
      // The check that found the provider done stores the outputs before it returns: the row shows
      // that step at once, the query when the activity returns. One poll ahead, and the wait is over.
      if (stored.progress.phase === 'storing_outputs') break;
      for (const p of [before.percent, afterQ.percent]) if (p !== null && seen.at(-1) !== p) seen.push(p);
      assert.equal(stored.progress.phase, 'generating');
      assert.equal(stored.progress.queue_position, null);
      // Within one poll: not older than the figure before the one the query held just before the
      // read, and not newer than what it held just after.
      const floorIndex = Math.max(0, seen.indexOf(before.percent ?? -1) - 1);
      if (stored.progress.percent !== null) {
        assert.ok(stored.progress.percent >= (seen[floorIndex] ?? 0), `stored ${stored.progress.percent} lags the query (${seen.join(', ')})`);
        // Ahead of the query only by the poll whose answer the workflow has not taken yet (the step
        // writes the row before it returns): the query reaches it with its next answer.
        const ahead = stored.progress.percent;
        if (ahead > (afterQ.percent ?? 100)) {
          await waitFor(
            `the query to reach the stored ${ahead} (it said ${afterQ.percent})`,
            async () => {
              const q = await query();
              return q !== null && (q.phase !== 'generating' || (q.percent ?? 0) >= ahead);
            },
            30_000,
            50,
          );
        }
        compared++;
      }
      const live = await c.get(`/v1/images/${id}?live=true`);
      const q = await query();
      // The live answer is the query's, cached at most a second: between the two reads around it.
      // (A job that finished between the reads has no progress any more.)
      if (live.body.data.progress?.phase === 'generating' && q?.phase === 'generating') {
        assert.ok(live.body.data.progress.percent <= (q.percent ?? 100));
      }
    }
    assert.ok(compared >= 3, `compared ${compared} readings while the provider worked`);
    assert.ok(seen.length >= 3, `the query saw the percent move: ${seen.join(', ')}`);
    const done = await waitForJobStatus(c, `/v1/images/${id}`, ['completed', 'failed']);
    assert.equal(done.status, 'completed');
    assert.equal(done.progress, undefined);
  });
});
