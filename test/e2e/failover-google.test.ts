// Google's Gemini API route on the real stack, declared for veo-3.1, sora-2-pro and sora-2 and not
// offered: Google shut the Veo 3.1 preview models down (providers/google/descriptor.ts). With
// GEMINI_API_KEY set and the Google fake up, an 8 s text job, the shape the route declares, is stored without
// failover routes, completes on fal and never reaches Google, even while fal fails: the job is not
// moved to a route whose model is gone. GET /v1/models lists the route with the reason, and a
// sora-2 create is answered with the deprecation headers naming veo-3.1.
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, type InProcessGateway as Gateway } from '../support/services.js';
import { startFailoverStack, type FailoverStack } from '../support/failover-stack.js';
import { createVideoOnFal, jobFinished, jobRow } from '../support/job-helpers.js';
import type { FakeFal } from '../support/fake-providers/fal.js';
import type { FakeGoogle } from '../support/fake-providers/google.js';
import { json } from '../support/fake-providers/server.js';

let stack: FailoverStack<'google'>;
let tdb: TestDatabase;
let fal: FakeFal;
let google: FakeGoogle;
let gw: Gateway;

before(async () => {
  stack = await startFailoverStack({
    secondary: 'google',
    roles: 'workflows,io,fetch,provider:fal,provider:google',
    env: { PROVIDER_BREAKER_OPEN_MS: '3600000' },
  });
  ({ tdb, fal, secondary: google, gw } = stack);
});

after(() => stack?.close());

beforeEach(async () => {
  fal.up();
  google.up();
  fal.flow = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
  await tdb.db.deleteFrom('provider_circuits').execute();
});

const create = (t: Tenant, model: string, marker: string) => createVideoOnFal(gw.baseUrl, t, model, marker, { duration: 8, resolution: '720p' });
const googleSubmits = (marker: string) => google.requestsOf('submit').filter((r) => JSON.stringify(r.json).includes(marker)).length;

describe("Google's Gemini API route is declared but not offered", () => {
  test('an 8 s text job of veo-3.1 is stored without failover routes and completes on fal; Google gets nothing', async () => {
    const t = await createTenant(tdb.db, 1000);
    const marker = '[veo-on-fal]';
    const id = await create(t, 'veo-3.1', marker);
    assert.equal(((await jobRow(tdb.db, id)).params as { routes?: unknown }).routes, undefined, 'no failover routes');
    const row = await jobFinished(tdb.db, id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(googleSubmits(marker), 0);
  });

  test('our account at fal is out of balance (a failure that moves a job at once where a route is offered): a sora-2-pro job fails, and is not moved to Google', async () => {
    fal.down(['submit'], json(403, { detail: 'User is locked. Reason: Exhausted balance. Top up your balance at fal.ai/dashboard/billing.' }));
    const t = await createTenant(tdb.db, 1000);
    const marker = '[fal-refuses]';
    const id = await create(t, 'sora-2-pro', marker);
    const row = await jobFinished(tdb.db, id);
    assert.equal(row.status, 'failed');
    assert.equal(googleSubmits(marker), 0, 'never submitted to Google');
    assert.equal(google.requestsOf('submit').length, 0);
  });

  test('GET /v1/models lists the Google route of veo-3.1, sora-2-pro and sora-2 as disabled, with the reason', async () => {
    const t = await createTenant(tdb.db, 10);
    const r = await api(gw.baseUrl, t.apiKey).get('/v1/models');
    assert.equal(r.status, 200, r.text);
    for (const name of ['veo-3.1', 'sora-2-pro', 'sora-2']) {
      const m = (r.body.data as { name: string; routes: { provider: string }[]; disabled_routes: { provider: string; reason: string }[] }[]).find(
        (x) => x.name === name,
      )!;
      assert.deepEqual(
        m.routes.map((x) => x.provider),
        ['fal'],
        name,
      );
      assert.equal(m.disabled_routes.length, 1, name);
      assert.equal(m.disabled_routes[0]!.provider, 'google');
      assert.match(m.disabled_routes[0]!.reason, /on 2026-10-22/);
    }
  });

  test('a sora-2 create is answered with Deprecation and X-Mediagen-Warning naming veo-3.1', async () => {
    const t = await createTenant(tdb.db, 1000);
    const r = await api(gw.baseUrl, t.apiKey).post('/v1/videos/generate', {
      project_id: t.projectId,
      prompt: 'a lighthouse [sora-2]',
      model: 'sora-2',
      duration: 8,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('deprecation'), `@${Date.UTC(2026, 8, 24) / 1000}`);
    assert.match(r.headers.get('x-mediagen-warning')!, /^model sora-2 is deprecated since 2026-09-24 .*; use veo-3\.1 instead$/);
    assert.equal(r.headers.get('sunset'), null, 'no retirement date is set');
  });
});
