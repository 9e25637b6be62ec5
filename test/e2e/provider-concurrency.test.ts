// A provider fleet never takes more concurrent requests than its limit: with PROVIDER_CONCURRENCY
// local=1, the provider submissions of jobs created together run one after another, as the
// workflows' histories show (no two submitToProvider activities overlap in time).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, type TestDatabase } from '../support/stack.js';
import { api, startService, waitForJobStatus, type InProcessGateway as Gateway, type Service } from '../support/services.js';

let svc: Service;
let tdb: TestDatabase;
let gw: Gateway;

before(async () => {
  svc = await startService({ PROVIDER_CONCURRENCY: 'local=1', RECONCILE_INTERVAL_MS: '3600000' });
  ({ tdb, gw } = svc);
});

after(async () => {
  await svc?.close();
});

/** [started, closed] wall-clock interval of each submitAndCheck attempt in a workflow's history. */
async function submitIntervals(jobId: string): Promise<[number, number][]> {
  const history = await gw.client.workflow.getHandle(jobId).fetchHistory();
  const events = history.events ?? [];
  const scheduled = new Map<string, string>();
  const started = new Map<string, number>();
  const intervals: [number, number][] = [];
  const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) => Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);
  for (const e of events) {
    const id = String(e.eventId);
    if (e.activityTaskScheduledEventAttributes) scheduled.set(id, e.activityTaskScheduledEventAttributes.activityType?.name ?? '');
    if (e.activityTaskStartedEventAttributes) {
      const sid = String(e.activityTaskStartedEventAttributes.scheduledEventId);
      if (scheduled.get(sid) === 'submitAndCheck') started.set(sid, ms(e.eventTime));
    }
    const closed = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes;
    if (closed) {
      const sid = String(closed.scheduledEventId);
      if (started.has(sid)) intervals.push([started.get(sid)!, ms(e.eventTime)]);
    }
  }
  return intervals;
}

describe('provider fleet concurrency', () => {
  test('with a limit of one, provider submissions of concurrent jobs never overlap', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    // Videos take the renderer a moment, so overlapping submissions would show.
    const created = await Promise.all(
      [0, 1, 2].map((i) =>
        c.post('/v1/videos/generate', { project_id: t.projectId, prompt: `queue ${i}`, model: 'seedance-1.5', duration: 4, resolution: '480p' }),
      ),
    );
    for (const r of created) assert.equal(r.status, 200, r.text);
    const ids = created.map((r) => r.body.data.id as string);
    for (const id of ids) assert.equal((await waitForJobStatus(c, `/v1/videos/${id}`, ['completed', 'failed'])).status, 'completed');

    const intervals = (await Promise.all(ids.map(submitIntervals))).flat().sort((a, b) => a[0] - b[0]);
    assert.equal(intervals.length, 3);
    for (let i = 1; i < intervals.length; i++) {
      assert.ok(intervals[i]![0] >= intervals[i - 1]![1], `submission ${i} started before submission ${i - 1} finished: ${JSON.stringify(intervals)}`);
    }
  });
});
