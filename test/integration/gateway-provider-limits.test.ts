// Create-time refusals of what a live provider cannot deliver as asked: a talking-actor script whose
// speech would pass InfiniteTalk's 721 frames (28.8 s) is a 400 naming the limit, and nothing is charged.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, createTenant, type TestDatabase, type Tenant } from '../support/stack.js';
import { creditsOf } from '../support/services.js';
import { call, insertCatalog, startInProcessGateway, type Gateway } from './gateway-harness.js';

describe('live-route limits at create time', () => {
  let tdb: TestDatabase;
  let gw: Gateway;
  let t: Tenant;
  let actorId: string;
  let voiceId: string;

  before(async () => {
    tdb = await createTestDatabase();
    // Keys make the talking-actor route live; the fakes are never reached: the request is refused first.
    gw = await startInProcessGateway(tdb.db, tdb.url, {
      RATE_LIMIT_GENERATE_PER_MIN: '1000',
      PROVIDERS_MODE: 'live',
      ELEVENLABS_API_KEY: 'el-test-key-0123456789',
      FAL_KEY: 'fal-test-key-0123456789',
    });
    t = await createTenant(tdb.db);
    ({
      actorIds: [actorId],
      voiceIds: [voiceId],
    } = (await insertCatalog(tdb.db, 1)) as { actorIds: [string]; voiceIds: [string] });
  });

  after(async () => {
    await gw?.close();
    await tdb?.drop();
  });

  const create = (body: Record<string, unknown>) =>
    call(gw.baseUrl, 'POST', '/v1/talking-actors/generate', { key: t.apiKey, body: JSON.stringify({ project_id: t.projectId, actor_id: actorId, voice_id: voiceId, ...body }), contentType: 'application/json' });

  test('a script longer than the lipsync cap is a 400 that states the limit, and charges nothing', async () => {
    const before = await creditsOf(tdb.db, t);
    const res = await create({ script: 'word '.repeat(200) });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.code, 'invalid_request');
    assert.equal(res.body.error.message, 'script: at most 403 characters at speed 1 here (talking-actor lipsyncs at most 28.8 seconds of speech per video); this script has 999');
    assert.equal(await creditsOf(tdb.db, t), before);
  });

  test('the limit follows the speaking speed: slower speech allows fewer characters', async () => {
    const res = await create({ script: 'x'.repeat(300), voice_options: { speed: 0.7 } });
    assert.equal(res.status, 400, res.text);
    assert.match(res.body.error.message, /^script: at most 282 characters at speed 0\.7 here/);
  });
});
