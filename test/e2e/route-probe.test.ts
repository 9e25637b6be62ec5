// The route health probe on the real stack: the gateway over HTTP, workflows on Temporal, Postgres,
// and grok-video's two live routes (fal's queue first, then xAI's own API), both local fakes that
// answer their providers' model endpoints. When fal stops listing the route's endpoint, the provider
// fleet's probe marks the route unavailable within one probe interval, GET /v1/models says why, and a
// job created then skips fal and completes on xAI; once fal lists it again the route is back.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, waitFor } from '../support/stack.js';
import { api } from '../support/services.js';
import { falRequestsWith, startFailoverStack, submitsWith, type FailoverStack } from '../support/failover-stack.js';
import { jobFinished, jobLedger } from '../support/job-helpers.js';

const intervalMs = 2_000;
const model = 'grok-video';
const falEndpoint = 'xai/grok-imagine-video/text-to-video';
let stack: FailoverStack<'xai'>;

before(async () => {
  stack = await startFailoverStack({
    secondary: 'xai',
    roles: 'workflows,io,fetch,provider:fal,provider:xai',
    env: { ROUTE_PROBE_INTERVAL_MS: String(intervalMs) },
  });
});

after(() => stack?.close());

async function listed(apiKey: string) {
  const r = await api(stack.gw.baseUrl, apiKey).get('/v1/models');
  assert.equal(r.status, 200, r.text);
  const m = (r.body.data as any[]).find((x) => x.name === model);
  // What each route delivers and takes (`output`, `controls`) is asserted in test/e2e/models.test.ts; here only its health.
  return { ...m, routes: m.routes.map(({ output: _output, controls: _controls, ...health }: { output: unknown; controls: unknown }) => health) };
}

const falRoute = () =>
  stack.tdb.db.selectFrom('route_probes').select(['status', 'checked_at']).where('provider', '=', 'fal').where('model', '=', model).executeTakeFirst();

test('a model fal lost is found within one probe interval, shown in GET /v1/models, and new jobs skip the route', async (ctx) => {
  const { fal, secondary: xai, tdb } = stack;
  const t = await createTenant(tdb.db, 100);
  // The probes are running: both routes were found available.
  await waitFor('the first probe of both routes', async () => (await falRoute())?.checked_at && (await listed(t.apiKey)).availability === 'available');
  assert.deepEqual((await listed(t.apiKey)).routes, [
    { provider: 'fal', circuit: 'closed', status: 'available', unavailable_reason: null },
    { provider: 'xai', circuit: 'closed', status: 'available', unavailable_reason: null },
  ]);

  // Probes of this route's endpoint, counted from the loss: the first one after it must find it gone.
  const probesOfRoute = () => fal.requestsOf('models').filter((r) => r.query.get('endpoint_id') === falEndpoint).length;
  const lostAt = Date.now();
  fal.loseModel(falEndpoint);
  const probesBefore = probesOfRoute();
  await waitFor('the probe to mark the fal route unavailable', async () => (await falRoute())?.status === 'unavailable', 10 * intervalMs, 25);
  const foundAfter = Date.now() - lostAt;
  // Passes start one interval apart, so the first probe after the loss comes within one interval; the
  // assertion is on the probe count, not the clock, so a busy machine cannot fail it.
  ctx.diagnostic(`the lost model was found after ${foundAfter} ms (probe interval ${intervalMs} ms)`);
  assert.equal(probesOfRoute() - probesBefore, 1, 'the first probe after the loss marked the route unavailable');

  const m = await listed(t.apiKey);
  assert.equal(m.availability, 'degraded');
  assert.deepEqual(m.routes[1], { provider: 'xai', circuit: 'closed', status: 'available', unavailable_reason: null });
  assert.equal(m.routes[0].provider, 'fal');
  assert.equal(m.routes[0].status, 'unavailable');
  assert.match(
    m.routes[0].unavailable_reason,
    /^fal route for xai\/grok-imagine-video\/text-to-video: model gone \(not listed by GET \/v1\/models\?endpoint_id=/,
  );

  // A job created now starts on xAI: fal never sees it, and it is no failover attempt.
  const marker = '[probe-skip]';
  const r = await api(stack.gw.baseUrl, t.apiKey).post('/v1/videos/generate', {
    project_id: t.projectId,
    prompt: `a lighthouse at dusk ${marker}`,
    model,
    aspect_ratio: '16:9',
    duration: 1,
    resolution: '480p',
  });
  assert.equal(r.status, 200, r.text);
  const row = await jobFinished(tdb.db, r.body.data.id);
  assert.equal(row.status, 'completed', JSON.stringify(row.error));
  assert.equal(falRequestsWith(fal, 'submit', marker), 0, 'the unavailable route got no submit');
  assert.equal(submitsWith(xai, marker), 1);
  const rec = (await api(stack.gw.baseUrl, t.apiKey).get(`/v1/videos/${r.body.data.id}`)).body.data;
  assert.equal(rec.provider, 'xai');
  assert.equal(rec.provider_attempts, undefined, 'a route out of rotation is skipped, not attempted');
  assert.deepEqual(await jobLedger(tdb.db, r.body.data.id), [['charge', -6]]);

  // Found again: back in rotation.
  fal.restoreModel();
  await waitFor('the probe to find the model again', async () => (await falRoute())?.status === 'available', 10 * intervalMs, 25);
  const back = await listed(t.apiKey);
  assert.equal(back.availability, 'available');
  assert.deepEqual(back.routes[0], { provider: 'fal', circuit: 'closed', status: 'available', unavailable_reason: null });
});
