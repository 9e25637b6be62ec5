// Create-time refusals of what a live provider cannot deliver as asked, each a 400 naming the limit that
// charges nothing: a talking-actor script whose speech would pass InfiniteTalk's 721 frames (28.8 s),
// and the limits of fal's published input schemas (Veo reference-to-video: 8 s and at most 3 images;
// Kling: 2,500 prompt characters, and Kling 3.0 Turbo's 3–15 s without an end frame; Nano Banana 2: at least 3).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, createTenant, type TestDatabase, type Tenant } from '../support/stack.js';
import { creditsOf } from '../support/services.js';
import { call, insertCatalog, startInProcessGateway, type Gateway } from './gateway-harness.js';
import { newId } from '../../shared/ids.js';

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
    call(gw.baseUrl, 'POST', '/v1/talking-actors/generate', {
      key: t.apiKey,
      body: JSON.stringify({ project_id: t.projectId, actor_id: actorId, voice_id: voiceId, ...body }),
      contentType: 'application/json',
    });

  test('a script longer than the lipsync cap is a 400 that states the limit, and charges nothing', async () => {
    const before = await creditsOf(tdb.db, t);
    const res = await create({ script: 'word '.repeat(200) });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.code, 'invalid_request');
    assert.equal(
      res.body.error.message,
      'script: at most 403 characters at speed 1 here (talking-actor lipsyncs at most 28.8 seconds of speech per video); this script has 999',
    );
    assert.equal(await creditsOf(tdb.db, t), before);
  });

  test('the limit follows the speaking speed: slower speech allows fewer characters', async () => {
    const res = await create({ script: 'x'.repeat(300), voice_options: { speed: 0.7 } });
    assert.equal(res.status, 400, res.text);
    assert.match(res.body.error.message, /^script: at most 282 characters at speed 0\.7 here/);
  });
});

describe("fal's published limits at create time, over HTTP", () => {
  let tdb: TestDatabase;
  let gw: Gateway;
  let t: Tenant;
  let images: string[];

  before(async () => {
    tdb = await createTestDatabase();
    // FAL_KEY makes the fal routes live; the fake is never reached: every request here is refused first.
    gw = await startInProcessGateway(tdb.db, tdb.url, { RATE_LIMIT_GENERATE_PER_MIN: '1000', PROVIDERS_MODE: 'live', FAL_KEY: 'fal-test-key-0123456789' });
    t = await createTenant(tdb.db);
    // Completed image uploads of the workspace (the refusals come before anything reads their bytes).
    images = [];
    for (let i = 0; i < 4; i++) {
      const id = newId('upl');
      await tdb.db
        .insertInto('file_uploads')
        .values({
          id,
          workspace_id: t.workspaceId,
          project_id: t.projectId,
          name: `ref-${i}.png`,
          object_key: `uploads/${id}.png`,
          file_type: 'image',
          mime_type: 'image/png',
          file_size: 100,
          status: 'completed',
          source_url: null,
        })
        .execute();
      images.push(id);
    }
  });

  after(async () => {
    await gw?.close();
    await tdb?.drop();
  });

  const post = (path: string, body: Record<string, unknown>) =>
    call(gw.baseUrl, 'POST', path, { key: t.apiKey, body: JSON.stringify({ project_id: t.projectId, ...body }), contentType: 'application/json' });

  /** The create is a 400 invalid_request with `message`, and no job or charge exists afterwards. */
  async function refused(path: string, body: Record<string, unknown>, message: string) {
    const credits = await creditsOf(tdb.db, t);
    const res = await post(path, body);
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.code, 'invalid_request');
    assert.equal(res.body.error.message, message);
    assert.equal(await creditsOf(tdb.db, t), credits, 'nothing is charged');
    const jobs = await tdb.db
      .selectFrom('jobs')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('workspace_id', '=', t.workspaceId)
      .executeTakeFirstOrThrow();
    assert.equal(Number(jobs.n), 0, 'no job is created');
  }

  test('a 6 s veo-3.1 job with reference images (reference-to-video renders 8 s only)', async () => {
    await refused(
      '/v1/videos/generate',
      { model: 'veo-3.1', prompt: 'a fox in the snow', duration: 6, reference_file_ids: images.slice(0, 2) },
      'duration: veo-3.1 with reference images supports 8 seconds',
    );
    await refused(
      '/v1/videos/generate',
      { model: 'sora-2-pro', prompt: 'a fox in the snow', duration: 4, reference_file_ids: images.slice(0, 1) },
      'duration: sora-2-pro with reference images supports 8 seconds',
    );
  });

  test('a fourth reference image (Veo takes at most 3)', async () => {
    await refused(
      '/v1/videos/generate',
      { model: 'veo-3.1', prompt: 'a fox in the snow', duration: 8, reference_file_ids: images },
      'reference_file_ids: veo-3.1 takes at most 3 reference images',
    );
  });

  test('a 2,501-character Kling prompt', async () => {
    await refused(
      '/v1/videos/generate',
      { model: 'kling-3.0', prompt: 'a'.repeat(2501) },
      'prompt: kling-3.0 takes at most 2500 characters; this prompt has 2501',
    );
    await refused(
      '/v1/videos/generate',
      { model: 'kling-2.6', prompt: 'a'.repeat(2501) },
      'prompt: kling-2.6 takes at most 2500 characters; this prompt has 2501',
    );
  });

  test('a 2-character Nano Banana 2 prompt', async () => {
    await refused(
      '/v1/images/generate',
      { model: 'nano-banana-2', prompt: 'ab', aspect_ratio: '1:1', count: 1 },
      'prompt: nano-banana-2 needs at least 3 characters; this prompt has 2',
    );
  });

  test('an end frame without a start frame (it would be dropped, yet priced)', async () => {
    await refused(
      '/v1/videos/generate',
      { model: 'kling-3.0', prompt: 'a fox in the snow', end_frame_file_id: images[0] },
      'end_frame_file_id: kling-3.0 needs start_frame_file_id (the first frame) with an end frame',
    );
  });

  test('Kling 3.0 Turbo outside what fal lists: 16 s or 2 s, an end frame, a 2,501-character prompt', async () => {
    for (const duration of [16, 2]) {
      await refused(
        '/v1/videos/generate',
        { model: 'kling-3.0-turbo', prompt: 'a fox in the snow', duration },
        'duration: kling-3.0-turbo supports 3 to 15 seconds',
      );
    }
    await refused(
      '/v1/videos/generate',
      { model: 'kling-3.0-turbo', prompt: 'a fox in the snow', start_frame_file_id: images[0], end_frame_file_id: images[1] },
      'end_frame_file_id: kling-3.0-turbo takes no end frame',
    );
    await refused(
      '/v1/videos/generate',
      { model: 'kling-3.0-turbo', prompt: 'a'.repeat(2501) },
      'prompt: kling-3.0-turbo takes at most 2500 characters; this prompt has 2501',
    );
  });

  test('the dry run quotes what the create refuses as the same 400', async () => {
    const res = await post('/v1/videos/generate?dry_run=true', {
      model: 'veo-3.1',
      prompt: 'a fox in the snow',
      duration: 6,
      reference_file_ids: images.slice(0, 2),
    });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.message, 'duration: veo-3.1 with reference images supports 8 seconds');
  });
});
