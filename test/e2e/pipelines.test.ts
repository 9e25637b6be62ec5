// Pipelines on the real stack (gateway over HTTP, the parent workflow and its step jobs' workflows
// on Temporal, Postgres, MinIO, the local renderer): image → video from that image as its start
// frame → a talking actor over that video completes, the video's first frame being the image and
// the talking actor's background being the video (both checked by pixels), the credits charged
// exactly the sum of the steps' prices; a third step the renderer refuses fails the pipeline
// (steps 1–2 paid and stored, step 3 refunded) and a resume with a new body completes it, paying
// step 3 only, with no second provider submit for steps 1–2; a failed video step resumed with
// another model runs on that model;
// a create referencing a missing step, a later step or the wrong media type is refused with 400
// naming the step and the field; a dry run quotes each step as its kind's own dry run does; the
// pipeline's events reach its webhook signed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startService, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { documentValidator } from '../support/openapi.js';
import type { Config } from '../../shared/config.js';
import { verifyWebhook } from '@mediagen/client/webhooks';
import { runAdmin } from '../../admin/main.js';
import { Receiver } from '../support/webhook-receiver.js';
import { closedRun, resetRun, runHistory } from '../support/resets.js';
import { insertActor, insertVoice } from '../support/fixtures.js';
import { reconcilerOf } from '../support/reconciler.js';
import { imageStep, videoStep } from '../support/pipeline-steps.js';
import { pipelineWorkflowType } from '../../workflows/pipeline-types.js';
import pino from 'pino';

let suite: Service;
let tdb: TestDatabase;
let config: Config;
let gw: Gateway;
let assertMatchesDocument: ReturnType<typeof documentValidator>;
const receiver = new Receiver();
/** Provider submits seen by the workers, per job (the submit activity, run by a real interceptor). */
const submits = new Map<string, number>();
const countSubmits: ActivityInterceptorsFactory = (ctx) => ({
  inbound: {
    execute: (input, next) => {
      if (ctx.info.activityType === 'submitAndCheck') {
        const id = ctx.info.workflowExecution?.workflowId ?? '';
        submits.set(id, (submits.get(id) ?? 0) + 1);
      }
      return next(input);
    },
  },
});

before(async () => {
  await receiver.start();
  suite = await startService(
    {
      RECONCILE_INTERVAL_MS: '3600000',
      RATE_LIMIT_GENERATE_PER_MIN: '1000',
      RATE_LIMIT_POLL_PER_MIN: '100000',
      LOCAL_RENDER_FAULTS: 'true',
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      WEBHOOK_RETRY_INITIAL_MS: '100',
    },
    { workers: { activityInterceptors: [countSubmits] } },
  );
  ({ tdb, config, gw } = suite);
  const doc = await api(gw.baseUrl).get('/v1/openapi.json');
  assert.equal(doc.status, 200);
  assertMatchesDocument = documentValidator(doc.body);
  actorId = await insertActor(tdb.db, gw.storage, { defaultVoiceId: await insertVoice(tdb.db) });
});

after(async () => {
  await receiver.close();
  await suite?.close();
});

/** The actor the talking steps use (an actor with a default voice, inserted once). */
let actorId: string;
/** The third step: a talking actor over the video of step 2 (looped behind the presenter). */
const talkStep = (script: string) => ({
  id: 'talk',
  kind: 'talking_actor',
  body: { actor_id: actorId, script, aspect_ratio: '16:9', background_video_file_id: { from: 'clip', output: 0 } },
});

/** The workspace's webhook signing secret (the admin CLI's rotate). */
async function signingSecret(t: Tenant): Promise<string> {
  const r = await runAdmin(['webhook', 'secret', 'rotate', '--workspace', t.workspaceId, '--as', t.ownerEmail, '--json'], {
    ...process.env,
    DATABASE_URL: tdb.url,
  });
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { secret: string }).secret;
}

async function pipelineEnded(t: Tenant, id: string, timeoutMs = 120_000): Promise<any> {
  const client = api(gw.baseUrl, t.apiKey);
  return waitFor(
    `pipeline ${id} to end`,
    async () => {
      const r = await client.get(`/v1/pipelines/${id}`);
      assert.equal(r.status, 200, r.text);
      return r.body.data.status === 'completed' || r.body.data.status === 'failed' ? r.body.data : undefined;
    },
    timeoutMs,
    200,
  );
}

/** The first frame of `url`, as rgb24 at width × height (ffmpeg reads the presigned URL on the loopback MinIO). */
function rgbFrame(url: string, width: number, height: number, filter = ''): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const vf = `scale=${width}:${height}${filter ? `,${filter}` : ''}`;
    const p = spawn(config.FFMPEG_PATH ?? 'ffmpeg', ['-v', 'error', '-i', url, '-frames:v', '1', '-vf', vf, '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-']);
    const chunks: Buffer[] = [];
    p.stdout.on('data', (c: Buffer) => chunks.push(c));
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve(Buffer.concat(chunks)) : reject(new Error(`ffmpeg exited ${code}`))));
  });
}

/** Mean absolute difference per channel over the top two thirds (the renderer's moving marker starts near the bottom). */
function meanDiff(a: Buffer, b: Buffer, width: number, height: number): number {
  const rows = Math.floor((height * 2) / 3);
  let sum = 0;
  for (let i = 0; i < rows * width * 3; i++) sum += Math.abs(a[i]! - b[i]!);
  return sum / (rows * width * 3);
}

describe('a three-step pipeline', () => {
  test('image → video from that image → a step over that video: completes, outputs stored, first frame is the image, charged the sum', async () => {
    const t = await createTenant(tdb.db, 1000);
    const client = api(gw.baseUrl, t.apiKey);
    const before = await creditsOf(tdb.db, t);
    const created = await client.post('/v1/pipelines', { project_id: t.projectId, steps: [imageStep(), videoStep(), talkStep('Hello from the lighthouse.')] });
    assert.equal(created.status, 200, created.text);
    assertMatchesDocument('post', '/v1/pipelines', created);
    assert.equal(created.body.data.charged, 0, 'nothing is charged at create');
    assert.deepEqual(
      created.body.data.steps.map((s: any) => s.status),
      ['waiting', 'waiting', 'waiting'],
    );

    const done = await pipelineEnded(t, created.body.data.id);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    const got = await client.get(`/v1/pipelines/${done.id}`);
    assertMatchesDocument('get', '/v1/pipelines/{id}', got);
    const [still, clip, talk] = done.steps;
    for (const s of done.steps) {
      assert.equal(s.status, 'completed');
      assert.equal(s.outputs.length, 1);
      assert.equal(s.charged, s.price, `step ${s.id} charged its price`);
      assert.equal(s.refunded, 0);
      assert.equal(submits.get(s.job_id), 1, `step ${s.id} submitted once`);
      // Each step is a job of its own, answered by its kind's endpoints.
      const job = await client.get(`/v1/jobs/${s.job_id}/timeline`);
      assert.equal(job.status, 200, job.text);
    }
    assert.equal(still.outputs[0].media_type, 'image/png');
    assert.equal(clip.outputs[0].media_type, 'video/mp4');
    assert.equal(talk.outputs[0].media_type, 'video/mp4');
    const sum = done.steps.reduce((n: number, s: any) => n + s.price, 0);
    assert.equal(done.price, sum);
    assert.equal(done.charged, sum);
    assert.equal(before - (await creditsOf(tdb.db, t)), sum, 'credits charged exactly the sum of the steps');

    // The video starts on the image: its first frame, pixel by pixel (the image mirrored is far off).
    const [w, h] = [160, 90];
    const first = await rgbFrame(clip.outputs[0].url, w, h);
    const image = await rgbFrame(still.outputs[0].url, w, h);
    const mirrored = await rgbFrame(still.outputs[0].url, w, h, 'hflip');
    const same = meanDiff(first, image, w, h);
    assert.ok(same < 8, `first frame differs from the image by ${same.toFixed(1)} per channel`);
    assert.ok(meanDiff(first, mirrored, w, h) > same * 2, 'the pixel check tells images apart');
    // The presenter talks over the video: its first frame's upper left quarter (the presenter sits
    // in the lower right) is the clip's.
    const quarter = 'crop=80:45:0:0';
    const talkCorner = await rgbFrame(talk.outputs[0].url, w, h, quarter);
    const clipCorner = await rgbFrame(clip.outputs[0].url, w, h, quarter);
    const behind = meanDiff(talkCorner, clipCorner, 80, 45);
    assert.ok(behind < 12, `the talking actor's background differs from the clip by ${behind.toFixed(1)} per channel`);
    assert.ok(meanDiff(talkCorner, await rgbFrame(clip.outputs[0].url, w, h, `hflip,${quarter}`), 80, 45) > behind * 2, 'the corner check tells frames apart');

    // The step's outputs are uploads of the workspace (what step 2 took as its start frame).
    const upload = await client.get(`/v1/uploads/${still.outputs[0].upload_id}`);
    assert.equal(upload.status, 200, upload.text);
    const clipJob = await tdb.db.selectFrom('jobs').select('params').where('id', '=', clip.job_id).executeTakeFirstOrThrow();
    assert.equal((clipJob.params as any).start_frame_file_id, still.outputs[0].upload_id);

    const receipt = await client.get(`/v1/pipelines/${done.id}/receipt`);
    assert.equal(receipt.status, 200, receipt.text);
    assertMatchesDocument('get', '/v1/pipelines/{id}/receipt', receipt);
    assert.equal(receipt.body.data.net, sum);
    const list = await client.get('/v1/pipelines');
    assert.equal(list.status, 200);
    assertMatchesDocument('get', '/v1/pipelines', list);
    assert.ok(list.body.data.some((p: any) => p.id === done.id));
  });

  test('the third step fails: steps 1–2 stay paid and stored, step 3 refunded; resume with a new body pays step 3 only', async () => {
    const t = await createTenant(tdb.db, 1000);
    const client = api(gw.baseUrl, t.apiKey);
    const before = await creditsOf(tdb.db, t);
    const secret = await signingSecret(t);
    const hook = `/hooks/${t.workspaceId}`;
    const created = await client.post('/v1/pipelines', {
      project_id: t.projectId,
      steps: [imageStep(), videoStep(), talkStep('Hello from the lighthouse. [fail:terminal]')],
      webhook_url: `${receiver.base}${hook}`,
      webhook_events: ['pipeline.completed', 'pipeline.failed', 'pipeline.step.completed', 'pipeline.step.failed'],
    });
    assert.equal(created.status, 200, created.text);
    const failed = await pipelineEnded(t, created.body.data.id);
    assert.equal(failed.status, 'failed');
    assert.match(failed.error.message, /step "talk" failed/);
    const [s1, s2, s3] = failed.steps;
    assert.deepEqual([s1.status, s2.status, s3.status], ['completed', 'completed', 'failed']);
    assert.equal(s1.charged, s1.price);
    assert.equal(s2.charged, s2.price);
    assert.equal(s1.outputs.length + s2.outputs.length, 2, 'steps 1–2 keep their outputs');
    assert.equal(s3.refunded, s3.charged, 'step 3 refunded');
    assert.equal(before - (await creditsOf(tdb.db, t)), s1.price + s2.price);

    const notFailed = await client.post(`/v1/pipelines/${failed.id}/resume`, { body: { nope: 1 } });
    assert.equal(notFailed.status, 400, 'a new body is validated as at create');
    // A step body of another kind (the published union takes it) is held to the failed step's kind.
    const otherKind = await client.post(`/v1/pipelines/${failed.id}/resume`, { body: imageStep().body });
    assert.equal(otherKind.status, 400, otherKind.text);
    assertMatchesDocument('post', '/v1/pipelines/{id}/resume', otherKind);
    assert.equal(otherKind.body.error.code, 'invalid_model');
    assert.match(otherKind.body.error.message, /^body: model nano-banana-2 is not supported here/);
    const resumed = await client.post(`/v1/pipelines/${failed.id}/resume`, { body: talkStep('Hello again from the lighthouse.').body });
    assert.equal(resumed.status, 200, resumed.text);
    assertMatchesDocument('post', '/v1/pipelines/{id}/resume', resumed);
    const done = await pipelineEnded(t, failed.id);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    const [r1, r2, r3] = done.steps;
    assert.equal(r1.job_id, s1.job_id);
    assert.equal(r2.job_id, s2.job_id);
    assert.equal(r3.jobs.length, 2, 'step 3 ran as a second job');
    assert.notEqual(r3.job_id, s3.job_id);
    assert.equal(submits.get(s1.job_id), 1, 'no second submit for step 1');
    assert.equal(submits.get(s2.job_id), 1, 'no second submit for step 2');
    assert.equal(before - (await creditsOf(tdb.db, t)), r1.price + r2.price + r3.price, 'only step 3 paid again');
    // Every move as a signed event: the steps, the failure, the resumed step and the completion.
    const unique = () => [...new Map(receiver.at(hook).map((r) => [r.headers['webhook-id'], r])).values()];
    const events = await waitFor('the pipeline events', () => (unique().length >= 6 ? unique() : undefined), 60_000, 100);
    const got = events.map((r) => verifyWebhook<any>(secret, r.body, r.headers)).map((e) => `${e.type}:${e.data.step?.id ?? e.data.status}`);
    assert.deepEqual(got.sort(), [
      'pipeline.completed:completed',
      'pipeline.failed:failed',
      'pipeline.step.completed:clip',
      'pipeline.step.completed:still',
      'pipeline.step.completed:talk',
      'pipeline.step.failed:talk',
    ]);
    const again = await client.post(`/v1/pipelines/${failed.id}/resume`, {});
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'not_resumable');
  });
});

describe('a resume with another model', () => {
  test('a failed video step resumed on another model runs as a job of that model, the first attempt refunded', async () => {
    const t = await createTenant(tdb.db, 1000);
    const client = api(gw.baseUrl, t.apiKey);
    const before = await creditsOf(tdb.db, t);
    const failing = videoStep('a slow pan [fail:terminal]');
    const created = await client.post('/v1/pipelines', { project_id: t.projectId, steps: [imageStep(), failing] });
    assert.equal(created.status, 200, created.text);
    const failed = await pipelineEnded(t, created.body.data.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.steps[1].refunded, failed.steps[1].charged, 'the failed attempt refunded');

    const other = {
      prompt: 'a slow pan',
      model: 'grok-video',
      aspect_ratio: '16:9',
      resolution: '480p',
      duration: 2,
      start_frame_file_id: { from: 'still', output: 0 },
    };
    const resumed = await client.post(`/v1/pipelines/${failed.id}/resume`, { body: other });
    assert.equal(resumed.status, 200, resumed.text);
    const done = await pipelineEnded(t, failed.id);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    const [still, clip] = done.steps;
    assert.equal(clip.model, 'grok-video');
    const job = await tdb.db.selectFrom('jobs').select(['model', 'params']).where('id', '=', clip.job_id).executeTakeFirstOrThrow();
    assert.equal(job.model, 'grok-video');
    assert.equal((job.params as any).start_frame_file_id, still.outputs[0].upload_id, "the new body's reference resolved to step 1's output");
    assert.equal(submits.get(still.job_id), 1, 'step 1 not submitted again');
    const quote = await client.post('/v1/videos/generate?dry_run=true', { ...other, start_frame_file_id: still.outputs[0].upload_id, project_id: t.projectId });
    assert.equal(quote.status, 200, quote.text);
    assert.equal(before - (await creditsOf(tdb.db, t)), still.price + quote.body.data.price, 'step 1 and the new model paid, nothing else');
  });
});

describe('a parent workflow no worker serves', () => {
  test('the reconciler starts a new run on the current build, which goes on from the current step: completes, each step submitted and charged once', async () => {
    const t = await createTenant(tdb.db, 1000);
    const client = api(gw.baseUrl, t.apiKey);
    const before = await creditsOf(tdb.db, t);
    const steps = [imageStep(), videoStep('a stalled pan')];
    const created = await client.post('/v1/pipelines', { project_id: t.projectId, steps });
    assert.equal(created.status, 200, created.text);
    const id = created.body.data.id;
    const clipJob = await waitFor('step 2 to have its job', async () => (await client.get(`/v1/pipelines/${id}`)).body.data.steps[1].job_id ?? undefined);
    // The job row comes first (the step's start), its workflow with the parent's next workflow task.
    await waitFor("step 2's job workflow to start", () =>
      gw.client.workflow
        .getHandle(clipJob)
        .describe()
        .then(
          () => true,
          () => undefined,
        ),
    );
    // The run goes away mid-step and its stand-in is pinned, as it were, to a build without workers:
    // a run on a task queue nobody polls.
    await gw.client.workflow.getHandle(id).terminate('test: the build serving this run is gone');
    const standIn = await gw.client.workflow.start(pipelineWorkflowType, {
      workflowId: id,
      taskQueue: `${config.TASK_QUEUE_PREFIX}-no-workers`,
      args: [{ pipelineId: id }],
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    // Step 2's job is the parent's abandoned child: it ends on its own, and nothing moves the pipeline on.
    await waitFor('step 2 to end', async () => {
      const job = await tdb.db.selectFrom('jobs').select('status').where('id', '=', clipJob).executeTakeFirstOrThrow();
      return job.status === 'completed' ? true : undefined;
    });
    assert.equal((await client.get(`/v1/pipelines/${id}`)).body.data.status, 'running');

    const reconciler = reconcilerOf({
      config: { ...config, PIPELINE_STALL_MS: 1000 },
      db: tdb.db,
      storage: gw.storage,
      client: gw.client,
      logger: pino({ level: 'silent' }),
    });
    const done = await waitFor('the reconciler to restart the pipeline and the pipeline to complete', async () => {
      await reconciler.runOnce();
      const p = (await client.get(`/v1/pipelines/${id}`)).body.data;
      return p.status === 'completed' || p.status === 'failed' ? p : undefined;
    });
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    assert.equal(
      (await gw.client.workflow.getHandle(id, standIn.firstExecutionRunId).describe()).status.name,
      'TERMINATED',
      'the stuck run is terminated, so it never runs beside the new one',
    );
    for (const s of done.steps) {
      assert.deepEqual(s.jobs, [s.job_id], `step ${s.id} ran as one job`);
      assert.equal(submits.get(s.job_id), 1, `step ${s.id} submitted once`);
      assert.equal(s.charged, s.price);
      assert.equal(s.outputs.length, 1, JSON.stringify(done));
    }
    assert.equal(done.steps[1].job_id, clipJob);
    assert.equal(before - (await creditsOf(tdb.db, t)), done.price, 'charged the sum of the steps, once');
  });
});

describe("an operator's reset of the parent workflow", () => {
  test('re-runs a failed pipeline from its failed step once credits are back; a reset of a completed one changes nothing', async () => {
    const steps = [imageStep(), videoStep('a reset pan')];
    const probe = await createTenant(tdb.db, 1000);
    const dry = await api(gw.baseUrl, probe.apiKey).post('/v1/pipelines?dry_run=true', { project_id: probe.projectId, steps });
    assert.equal(dry.status, 200, dry.text);
    // Enough for step 1 only: step 2 is refused at its start, nothing charged for it.
    const t = await createTenant(tdb.db, dry.body.data.steps[0].price);
    const client = api(gw.baseUrl, t.apiKey);
    const created = await client.post('/v1/pipelines', { project_id: t.projectId, steps });
    assert.equal(created.status, 200, created.text);
    const failed = await pipelineEnded(t, created.body.data.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error.code, 'insufficient_credits');
    assert.deepEqual(failed.steps[1].jobs, []);

    await tdb.db.updateTable('workspaces').set({ credits: 1000 }).where('id', '=', t.workspaceId).execute();
    const temporal = gw.client;
    const runId = await closedRun(temporal, failed.id, 'COMPLETED');
    const history = await runHistory(temporal, failed.id, runId);
    await resetRun(temporal, config.TEMPORAL_NAMESPACE, failed.id, runId, history.points[0]!);
    const done = await waitFor('the reset run to complete the pipeline', async () => {
      const p = (await client.get(`/v1/pipelines/${failed.id}`)).body.data;
      return p.status === 'completed' ? p : undefined;
    });
    assert.equal(done.steps[0].job_id, failed.steps[0].job_id, 'step 1 kept');
    assert.equal(submits.get(done.steps[0].job_id), 1, 'step 1 not submitted again');
    assert.equal(done.steps[1].jobs.length, 1);
    assert.equal(await creditsOf(tdb.db, t), 1000 - done.steps[1].price, 'only step 2 charged by the re-run');

    // A reset of the completed run replays its steps: found completed, no job, no charge.
    const doneRun = await closedRun(temporal, failed.id, 'COMPLETED');
    const again = await runHistory(temporal, failed.id, doneRun);
    const rerun = await resetRun(temporal, config.TEMPORAL_NAMESPACE, failed.id, doneRun, again.points[0]!);
    await waitFor('the second reset run to close', async () => {
      const d = await temporal.workflow.getHandle(failed.id, rerun).describe();
      return d.status.name === 'COMPLETED' ? true : undefined;
    });
    const after = (await client.get(`/v1/pipelines/${failed.id}`)).body.data;
    assert.equal(after.status, 'completed');
    assert.deepEqual(
      after.steps.map((s: any) => s.jobs),
      done.steps.map((s: any) => s.jobs),
    );
    assert.equal(await creditsOf(tdb.db, t), 1000 - done.steps[1].price);
  });
});

describe('validation at create', () => {
  let t: Tenant;
  before(async () => {
    t = await createTenant(tdb.db, 1000);
  });

  const refused = async (steps: unknown[], status: number, pattern: RegExp) => {
    const r = await api(gw.baseUrl, t.apiKey).post('/v1/pipelines', { project_id: t.projectId, steps });
    assert.equal(r.status, status, r.text);
    assertMatchesDocument('post', '/v1/pipelines', r);
    assert.match(r.body.error.message, pattern);
  };

  test('a reference to a missing step: 400 naming the step and the field', async () => {
    const clip = { ...videoStep(), body: { ...videoStep().body, start_frame_file_id: { from: 'nope', output: 0 } } };
    await refused([imageStep(), clip], 400, /^steps\[1\]\.body\.start_frame_file_id: step "nope" does not exist/);
  });

  test('a reference to a later step, or to an output it does not make', async () => {
    await refused([videoStep(), imageStep()], 400, /^steps\[0\]\.body\.start_frame_file_id: step "still" does not run before this step/);
    const clip = { ...videoStep(), body: { ...videoStep().body, start_frame_file_id: { from: 'still', output: 1 } } };
    await refused([imageStep(), clip], 400, /^steps\[1\]\.body\.start_frame_file_id: step "still" makes 1 output, so output 1 does not exist/);
  });

  test('a reference of the wrong media type: 400 naming the step and the field', async () => {
    const clip2 = { ...videoStep(), id: 'clip2', body: { ...videoStep().body, start_frame_file_id: { from: 'clip', output: 0 } } };
    await refused([imageStep(), videoStep(), clip2], 400, /^steps\[2\]\.body\.start_frame_file_id: step "clip" outputs video, an image is expected$/);
    const talk = { ...talkStep('x'), body: { ...talkStep('x').body, background_video_file_id: { from: 'still', output: 0 } } };
    await refused([imageStep(), videoStep(), talk], 400, /^steps\[2\]\.body\.background_video_file_id: step "still" outputs image, a video is expected$/);
  });

  test("a step's own body is checked as its create endpoint checks it", async () => {
    const bad = { ...imageStep(), body: { ...imageStep().body, model: 'no-such-model' } };
    const r = await api(gw.baseUrl, t.apiKey).post('/v1/pipelines', { project_id: t.projectId, steps: [bad] });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'invalid_model');
    await refused([{ ...imageStep(), body: { ...imageStep().body, aspect_ratio: '5:4' } }], 400, /^steps\[0\]\.body\.aspect_ratio: /);
    await refused(
      [{ ...videoStep(), body: { ...videoStep().body, start_frame_file_id: 'upl_missing' } }],
      404,
      /^steps\[0\]\.body\.start_frame_file_id: file upload upl_missing not found/,
    );
    await refused([{ ...imageStep(), body: { ...imageStep().body, project_id: t.projectId } }], 400, /^steps\[0\]\.body\.project_id: /);
    // The schema's own refusal: a step body is its kind's, an image step has no start frame.
    await refused(
      [{ ...imageStep(), body: { ...imageStep().body, start_frame_file_id: { from: 'still', output: 0 } } }],
      400,
      /^steps\[0\]\.body: Unrecognized key: "start_frame_file_id"/,
    );
    await refused([imageStep(), { ...imageStep() }], 400, /^steps\[1\]\.id: step id "still" is used by an earlier step/);
    await refused(
      Array.from({ length: 9 }, (_, i) => ({ ...imageStep(), id: `s${i}` })),
      400,
      /^steps: at most 8 steps/,
    );
  });

  test('past PIPELINE_MAX_ACTIVE pipelines pending or running, a create answers 429 rate_limited', async () => {
    const busy = await createTenant(tdb.db, 1000);
    await tdb.db
      .insertInto('pipelines')
      .values(
        Array.from({ length: config.PIPELINE_MAX_ACTIVE }, (_, i) => ({
          id: `pl_busy${i}_${busy.workspaceId}`,
          workspace_id: busy.workspaceId,
          project_id: busy.projectId,
          api_key_id: busy.apiKeyId,
          price: 0,
          webhook_url: null,
          status: 'running' as const,
        })),
      )
      .execute();
    const r = await api(gw.baseUrl, busy.apiKey).post('/v1/pipelines', { project_id: busy.projectId, steps: [imageStep()] });
    assert.equal(r.status, 429, r.text);
    assertMatchesDocument('post', '/v1/pipelines', r);
    assert.equal(r.body.error.code, 'rate_limited');
    assert.match(r.body.error.message, /PIPELINE_MAX_ACTIVE/);
    await tdb.db.updateTable('pipelines').set({ status: 'completed' }).where('id', '=', `pl_busy0_${busy.workspaceId}`).execute();
    const ok = await api(gw.baseUrl, busy.apiKey).post('/v1/pipelines', { project_id: busy.projectId, steps: [imageStep()] });
    assert.equal(ok.status, 200, ok.text);
  });

  test('a dry run quotes each step as its kind does, and writes nothing', async () => {
    const client = api(gw.baseUrl, t.apiKey);
    const before = await creditsOf(tdb.db, t);
    const r = await client.post('/v1/pipelines?dry_run=true', { project_id: t.projectId, steps: [imageStep(), videoStep(), talkStep('Hi.')] });
    assert.equal(r.status, 200, r.text);
    assertMatchesDocument('post', '/v1/pipelines', r);
    const image = await client.post('/v1/images/generate?dry_run=true', { ...imageStep().body, project_id: t.projectId });
    assert.equal(image.status, 200, image.text);
    assert.deepEqual(
      r.body.data.steps.map((s: any) => s.id),
      ['still', 'clip', 'talk'],
    );
    assert.equal(r.body.data.steps[0].price, image.body.data.price);
    assert.equal(
      r.body.data.price,
      r.body.data.steps.reduce((n: number, s: any) => n + s.price, 0),
    );
    assert.equal(r.body.data.available, before);
    assert.equal(r.body.data.sufficient, before >= r.body.data.price);
    const rows = await tdb.db.selectFrom('pipelines').select('id').where('workspace_id', '=', t.workspaceId).execute();
    assert.equal(rows.length, 0);
    assert.equal(await creditsOf(tdb.db, t), before);
  });
});
