// Records the saved workflow histories that the replay test (test/workflows/replay.test.ts) runs
// through the current workflow code: one history of every path a deploy can find in flight, each
// from a real job (or delivery, upload, provider cancel) on the real stack. What each file holds is
// listed in test/workflows/saved-histories.ts; the replay test requires every one of them.
//
//   eval "$(scripts/stack.sh up test)" && npm run build:all && node dist/scripts/histories/save-histories.js [group words...]
//
// Words on the command line run only the groups whose name holds one of them (`pipeline`,
// `encrypted`, `fal`...): the other saved files stay as they are.
//
// Regenerate only on purpose (a deliberate change of a workflow's shape): the point of the saved
// histories is that workflow code which can no longer replay them fails the test. Jobs are pinned to
// the build that started them (Worker Versioning), so they describe the current build only.
//
// Every group of paths runs on a database and task queues of its own, one group at a time, with the
// settings its paths need: the local renderer (instant, or slow so a job is caught mid-flight), a
// fake fal.ai queue (PROVIDERS_MODE=live, a paid provider whose requests are recorded), and workers
// that reach Postgres through a loopback TCP proxy that can cut it off. Traffic stays on loopback.
import { mkdir } from 'node:fs/promises';
import { createTenant, insertImageJob, waitFor } from '../../test/support/stack.js';
import { api } from '../../test/support/services.js';
import { insertActor, insertUpload, insertVoice } from '../../test/support/fixtures.js';
import { makeSampleMedia, startHttpsTestServer, type HttpsTestServer } from '../../test/support/https-server.js';
import { startFakeFal } from '../../test/support/fake-providers/fal.js';
import { startFakeXai } from '../../test/support/fake-providers/xai.js';
import { startFakeElevenLabs } from '../../test/support/fake-providers/elevenlabs.js';
import { json } from '../../test/support/fake-providers/server.js';
import { localActivityOf } from '../../test/support/history.js';
import { Holds } from '../../test/support/holds.js';
import { deliveriesOfJob } from '../../db/repos/webhooks.js';
import { ledgerForJob } from '../../test/support/ledger.js';
import { jobToStart, startJobWorkflow } from '../../workflows/client.js';
import { runAdmin } from '../../admin/main.js';
import { savedHistories, type HistoryName } from '../../test/workflows/saved-histories.js';
import { providerSecrets } from '../../providers/index.js';
import { savePipelineAndEncryptedHistories } from './save-histories-pipelines.js';

// Every provider key emptied (the fal group sets its own back): no provider is live by accident.
const noProviderKeys = Object.fromEntries(providerSecrets.map((k) => [k, '']));
import {
  closedAs,
  create,
  finish,
  generating,
  group,
  imageBody,
  jobStatus,
  only,
  outDir,
  reset,
  save,
  saved,
  startPgProxy,
  startReceiver,
} from './save-histories-support.js';

async function main() {
  await mkdir(outDir, { recursive: true });
  const media = await makeSampleMedia();
  // Remote inputs, upload-from-url sources and the fake fal's CDN: one loopback HTTPS origin.
  const remote: HttpsTestServer = await startHttpsTestServer();
  remote.file('/character.png', media['image/png'], 'image/png');
  remote.file('/motion.mp4', media['video/mp4'], 'video/mp4');
  const fetchSettings = { FETCH_ALLOW_LOOPBACK_ORIGIN: remote.origin, FETCH_EXTRA_CA_FILE: remote.caFile, FETCH_TOTAL_TIMEOUT_MS: '20000' };
  const fal = await startFakeFal();
  fal.filesBaseUrl = remote.origin;
  // The fake fal queue as a live provider, its outputs served from the loopback CDN above.
  const falSettings = { FAL_KEY: fal.key, FAL_QUEUE_URL: fal.url, FAL_API_URL: fal.url, PROVIDER_OUTPUT_HOSTS: '127.0.0.1' };
  const xai = await startFakeXai();
  xai.filesBaseUrl = remote.origin;
  const el = await startFakeElevenLabs();
  const pgProxy = await startPgProxy(new URL(process.env.DATABASE_URL!));
  try {
    await group(
      'the local renderer, instant',
      {
        ...fetchSettings,
        LOCAL_RENDER_FAULTS: 'true',
        WEBHOOK_ALLOW_LOOPBACK: 'true',
        WEBHOOK_TIMEOUT_MS: '2000',
        WEBHOOK_RETRY_INITIAL_MS: '200',
        WEBHOOK_RETRY_MAX_INTERVAL_MS: '1000',
      },
      async (g) => {
        const t = await createTenant(g.tdb.db, 10_000);
        const voice = await insertVoice(g.tdb.db);
        const actor = await insertActor(g.tdb.db, g.gw.storage, { defaultVoiceId: voice });
        const startFrame = await insertUpload(g.tdb.db, g.gw.storage, t, 'image');
        const image = await insertUpload(g.tdb.db, g.gw.storage, t, 'image');
        const video = await insertUpload(g.tdb.db, g.gw.storage, t, 'video');

        await finish(g, 'image', await create(g, t, '/v1/images/generate', imageBody('a fox in snow')), 'completed');
        await finish(
          g,
          'video',
          await create(g, t, '/v1/videos/generate', {
            prompt: 'waves at dusk',
            model: 'seedance-1.5',
            aspect_ratio: '9:16',
            duration: 4,
            resolution: '480p',
            start_frame_file_id: startFrame,
          }),
          'completed',
        );
        await finish(
          g,
          'image-deadline-completed',
          await create(g, t, '/v1/images/generate', { ...imageBody('done well before its deadline'), deadline_seconds: 600 }),
          'completed',
        );
        await finish(
          g,
          'replace_actor',
          await create(g, t, '/v1/replace-actors/generations', { image_file_id: image, video_file_id: video, duration: 3 }),
          'completed',
        );
        await finish(
          g,
          'talking_actor',
          await create(g, t, '/v1/talking-actors/generate', { actor_id: actor, script: 'Hello there. This is a replay test.' }),
          'completed',
        );
        await finish(
          g,
          'replace_actor-url-inputs',
          await create(g, t, '/v1/replace-actors/generations', {
            image_url: `${remote.origin}/character.png`,
            video_url: `${remote.origin}/motion.mp4`,
            duration: 3,
          }),
          'completed',
        );
        await finish(g, 'image-failed', await create(g, t, '/v1/images/generate', imageBody('broken [fail:terminal]')), 'failed');

        // A failed job reset once its workspace can no longer pay (its balance set to 0 here, as if
        // spent on other jobs meanwhile): the revival's charge is refused.
        const poor = await createTenant(g.tdb.db, 100);
        const refused = await create(g, poor, '/v1/images/generate', imageBody('broken again [fail:terminal]'));
        const runId = await closedAs(g.gw.client, refused, 'FAILED');
        await g.tdb.db.updateTable('workspaces').set({ credits: 0 }).where('id', '=', poor.workspaceId).execute();
        const first = (await g.gw.client.workflow.getHandle(refused, runId).fetchHistory()).events?.find((e) => e.workflowTaskCompletedEventAttributes);
        const resetRun = await reset(g, refused, runId, first?.eventId, 'operator: retry with the renderer fixed');
        await save('image-reset-insufficient-credits', g.gw.client.workflow.getHandle(refused, resetRun));
        const after = await jobStatus(g, refused);
        if (after.status !== 'failed') throw new Error(`the unpaid revival left ${refused} ${after.status}`);

        // webhookDelivery: the job's terminal event, delivered on the second attempt.
        const rotated = await runAdmin(['webhook', 'secret', 'rotate', '--workspace', t.workspaceId, '--as', t.ownerEmail, '--json'], {
          ...process.env,
          DATABASE_URL: g.tdb.url,
        });
        if (rotated.code !== 0) throw new Error(`webhook secret rotate failed: ${rotated.stderr}`);
        const receiver = await startReceiver([503, 204]);
        try {
          const hooked = await create(g, t, '/v1/images/generate', { ...imageBody('a kite, announced'), webhook_url: receiver.url });
          const delivery = await waitFor(`${hooked}'s webhook to be delivered`, async () => {
            const rows = await deliveriesOfJob(g.tdb.db, hooked);
            return rows.length === 1 && rows[0]!.delivered_at !== null ? rows[0]! : undefined;
          });
          await save('webhook-delivery', g.gw.client.workflow.getHandle(delivery.id));
        } finally {
          await receiver.close();
        }

        // uploadFromUrl: the gateway answers once the workflow stored the file.
        const uploaded = await api(g.gw.baseUrl, t.apiKey).post('/v1/upload-from-url', { project_id: t.projectId, url: `${remote.origin}/character.png` });
        if (uploaded.status !== 200) throw new Error(`upload-from-url answered ${uploaded.status}: ${uploaded.text}`);
        await save('upload-from-url', g.gw.client.workflow.getHandle(uploaded.body.data.id as string));
      },
    );

    await group(
      'webhooks whose retries run out',
      {
        WEBHOOK_ALLOW_LOOPBACK: 'true',
        WEBHOOK_TIMEOUT_MS: '2000',
        WEBHOOK_RETRY_INITIAL_MS: '200',
        WEBHOOK_RETRY_MAX_INTERVAL_MS: '500',
        WEBHOOK_RETRY_FOR_MS: '3000',
      },
      async (g) => {
        const t = await createTenant(g.tdb.db, 10_000);
        const rotated = await runAdmin(['webhook', 'secret', 'rotate', '--workspace', t.workspaceId, '--as', t.ownerEmail, '--json'], {
          ...process.env,
          DATABASE_URL: g.tdb.url,
        });
        if (rotated.code !== 0) throw new Error(`webhook secret rotate failed: ${rotated.stderr}`);
        // The receiver answers 503 to every attempt: the retries run out and the event is given up.
        const receiver = await startReceiver([503]);
        try {
          const hooked = await create(g, t, '/v1/images/generate', { ...imageBody('a kite, announced to nobody'), webhook_url: receiver.url });
          const delivery = await waitFor(`${hooked}'s webhook to be given up`, async () => {
            const rows = await deliveriesOfJob(g.tdb.db, hooked);
            return rows.length === 1 && rows[0]!.failed_at !== null ? rows[0]! : undefined;
          });
          await save('webhook-abandon', g.gw.client.workflow.getHandle(delivery.id));
        } finally {
          await receiver.close();
        }
      },
    );

    // A cancel that reaches a job after its outputs were stored, while its completion step runs: the
    // step is canceled, the job failed and refunded (the held step, released, is refused).
    const holds = new Holds();
    await group(
      'a cancel after the outputs were stored',
      {},
      async (g) => {
        const t = await createTenant(g.tdb.db, 10_000);
        const complete = holds.activity('completeJob', 'before');
        const late = await create(g, t, '/v1/images/generate', imageBody('canceled once its outputs were stored'));
        if ((await complete.reached) !== late) throw new Error('another job reached completeJob');
        const canceled = await api(g.gw.baseUrl, t.apiKey).post(`/v1/images/${late}/cancel`, {});
        if (canceled.status !== 200) throw new Error(`cancel answered ${canceled.status}: ${canceled.text}`);
        await waitFor(`${late} to be failed by its cancel`, async () => ((await jobStatus(g, late)).status === 'failed' ? true : undefined));
        complete.release();
        await complete.finished;
        await finish(g, 'image-canceled-after-completion', late, 'failed');
      },
      { holds },
    );

    await group('the local renderer, slow (jobs caught while the provider works)', { LOCAL_RENDER_LATENCY_MS: '120000' }, async (g) => {
      const t = await createTenant(g.tdb.db, 10_000);
      const canceled = await create(g, t, '/v1/images/generate', imageBody('canceled while rendering'));
      await generating(g, canceled);
      await g.gw.client.workflow.getHandle(canceled).cancel();
      await finish(g, 'image-canceled', canceled, 'failed');

      // A model deadline of 3 s (the catalog's are minutes): the job is written as the gateway
      // writes it and its workflow started as the gateway starts it.
      const late = await insertImageJob(g.tdb.db, t, { prompt: 'never ready in time', deadlineSeconds: 3 });
      await startJobWorkflow(g.gw.client, jobToStart(late, g.config.TASK_QUEUE_PREFIX));
      await finish(g, 'image-deadline-exceeded', late.id, 'failed');

      // The customer's deadline: passed while the renderer works (canceled there), and passed before
      // the job's workflow ran (the row's deadline_at set in the past, the workflow started as the
      // reconciler would have).
      const overdue = await create(g, t, '/v1/images/generate', { ...imageBody('past its deadline while rendering'), deadline_seconds: 10 });
      await finish(g, 'image-deadline-passed-while-running', overdue, 'failed');
      const stale = await insertImageJob(g.tdb.db, t, { prompt: 'past its deadline before it started' });
      const staleRow = await g.tdb.db
        .updateTable('jobs')
        .set({ deadline_at: new Date(Date.now() - 1000) })
        .where('id', '=', stale.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      await startJobWorkflow(g.gw.client, jobToStart(staleRow, g.config.TASK_QUEUE_PREFIX));
      await finish(g, 'image-deadline-passed-before-start', stale.id, 'failed');

      // Terminate skips workflow code; the reconciler refunds the job and starts the provider cancel.
      const terminated = await create(g, t, '/v1/images/generate', imageBody('terminated by an operator'));
      await generating(g, terminated);
      await g.gw.client.workflow.getHandle(terminated).terminate('operator: stuck job');
      await waitFor('the reconciler to settle the terminated job', async () => {
        await g.workers.fleet.reconciler!.runOnce();
        return (await jobStatus(g, terminated)).status === 'failed' ? true : undefined;
      });
      await save('provider-cancel', g.gw.client.workflow.getHandle(`${terminated}-provider-cancel`));
    });

    await group(
      'a paid provider (the fake fal queue)',
      {
        ...fetchSettings,
        ...noProviderKeys,
        PROVIDERS_MODE: 'live',
        ...falSettings,
      },
      async (g) => {
        // The CDN serves each request's output once fal has it.
        const cdn = setInterval(() => {
          for (const id of fal.states.keys()) remote.file(`/files/${id}-1.png`, media['image/png'], 'image/png');
        }, 20);
        try {
          const t = await createTenant(g.tdb.db, 10_000);
          await finish(g, 'fal-image', await create(g, t, '/v1/images/generate', imageBody('a heron at dawn')), 'completed');
          if (fal.requestsOf('submit').length !== 1) throw new Error(`fal saw ${fal.requestsOf('submit').length} submits for one job`);

          fal.nextOutcome('content_policy');
          const failed = await create(g, t, '/v1/images/generate', imageBody('flagged by the content checker'));
          await finish(g, 'fal-image-failed-after-submit', failed, 'failed');
          const runId = await closedAs(g.gw.client, failed, 'FAILED');

          // Reset to the workflow task that followed the submit: the new run's first database step
          // (the provider check) revives the job, finds its request canceled and submits again.
          const events = (await g.gw.client.workflow.getHandle(failed, runId).fetchHistory()).events ?? [];
          const submitted = events.findIndex((e) => e.activityTaskCompletedEventAttributes);
          const point = events.slice(submitted).find((e) => e.workflowTaskCompletedEventAttributes);
          const resetRun = await reset(g, failed, runId, point?.eventId, 'operator: the content checker was wrong');
          await finish(g, 'fal-image-reset', failed, 'completed', resetRun);
          const ledger = (await ledgerForJob(g.tdb.db, failed)).map((l) => l.reason).join(',');
          if (ledger !== 'charge,refund,recharge') throw new Error(`the reset job's ledger is ${ledger}`);
          if (fal.requestsOf('cancel').length < 1) throw new Error('the failed request was never canceled at fal');
        } finally {
          clearInterval(cdn);
        }
      },
    );

    await group(
      'a speech step, then a fal request (talking actor: the fake ElevenLabs, then the fake fal queue)',
      {
        ...fetchSettings,
        ...noProviderKeys,
        PROVIDERS_MODE: 'live',
        ...falSettings,
        ...el.env,
      },
      async (g) => {
        const cdn = setInterval(() => {
          for (const id of fal.states.keys()) remote.file(`/files/${id}.mp4`, media['video/mp4'], 'video/mp4');
        }, 20);
        try {
          const t = await createTenant(g.tdb.db, 10_000);
          const voice = await insertVoice(g.tdb.db, { providerVoiceId: [...el.voices][0]! });
          const actor = await insertActor(g.tdb.db, g.gw.storage, { defaultVoiceId: voice });
          const speeches = el.requestsOf('tts').length;
          const id = await create(g, t, '/v1/talking-actors/generate', { actor_id: actor, script: 'Hello there. This is a replay test.' });
          await finish(g, 'fal-talking-actor', id, 'completed');
          if (el.requestsOf('tts').length !== speeches + 1) throw new Error('the talking actor was not spoken exactly once');
        } finally {
          clearInterval(cdn);
        }
      },
    );

    await group(
      'two live routes (grok-video: the fake fal queue, then the fake xAI video API)',
      {
        ...fetchSettings,
        PROVIDERS_MODE: 'live',
        ...falSettings,
        XAI_API_KEY: xai.key,
        XAI_BASE_URL: xai.url,
        PROVIDER_FAILOVER_BUDGET_MS: '1500',
        OPENAI_API_KEY: '',
        ELEVENLABS_API_KEY: '',
      },
      async (g) => {
        const cdn = setInterval(() => {
          for (const id of xai.states.keys()) remote.file(`/files/${id}.mp4`, media['video/mp4'], 'video/mp4');
        }, 20);
        try {
          const t = await createTenant(g.tdb.db, 10_000);
          // fal takes the request, then its status endpoint stays down past the failover budget.
          fal.down(['status'], json(502, { detail: 'Bad Gateway' }));
          const cancelsBefore = fal.requestsOf('cancel').length;
          const id = await create(g, t, '/v1/videos/generate', {
            prompt: 'a lighthouse in a storm',
            model: 'grok-video',
            aspect_ratio: '16:9',
            duration: 1,
            resolution: '480p',
          });
          await finish(g, 'grok-video-failover', id, 'completed');
          const row = await g.tdb.db.selectFrom('jobs').select(['params', 'provider_attempts']).where('id', '=', id).executeTakeFirstOrThrow();
          if (row.params.provider !== 'xai' || row.provider_attempts.length !== 1)
            throw new Error(`the failover job ended on ${row.params.provider} after ${JSON.stringify(row.provider_attempts)}`);
          // The given-up request's cancel ran in its own workflow, not waited for by the job.
          await save('provider-cancel-given-up', g.gw.client.workflow.getHandle(`${id}-given-up-fal`));
          if (fal.requestsOf('cancel').length !== cancelsBefore + 1) throw new Error('the given-up request was not canceled once at fal');

          // A job that gave fal up and was then refused by xAI, reset to the workflow task that gave
          // fal up: the route step is the new run's first, claims the job, and xAI serves it.
          xai.nextOutcome('moderated');
          const refused = await create(g, t, '/v1/videos/generate', {
            prompt: 'a lighthouse in a gale',
            model: 'grok-video',
            aspect_ratio: '16:9',
            duration: 1,
            resolution: '480p',
          });
          await finish(g, 'grok-video-failed-after-failover', refused, 'failed');
          const runId = await closedAs(g.gw.client, refused, 'FAILED');
          const events = (await g.gw.client.workflow.getHandle(refused, runId).fetchHistory()).events ?? [];
          // The second routeJob step is the give-up (the first chose the starting route).
          const giveUp = events.filter((e) => localActivityOf(e) === 'routeJob')[1];
          if (!giveUp) throw new Error(`${refused} never gave fal up`);
          const point = events.filter((e) => e.workflowTaskCompletedEventAttributes && Number(e.eventId) < Number(giveUp.eventId)).at(-1);
          const resetRun = await reset(g, refused, runId, point?.eventId, 'operator: the moderation was wrong');
          await finish(g, 'grok-video-reset-after-give-up', refused, 'completed', resetRun);

          // Every route fails: fal past its budget, then xAI past its budget; the job fails, refunded.
          fal.down(['submit', 'status', 'result', 'cancel'], json(503, { detail: 'Service Unavailable' }));
          xai.down(['submit', 'status'], json(503, { code: 'unavailable', error: 'The service is currently unavailable' }));
          const doomed = await create(g, t, '/v1/videos/generate', {
            prompt: 'a lighthouse nobody can render',
            model: 'grok-video',
            aspect_ratio: '16:9',
            duration: 1,
            resolution: '480p',
          });
          await finish(g, 'grok-video-every-route-failed', doomed, 'failed');
          fal.up();
          xai.up();

          // fal's breaker open at the start: the job skips it and goes straight to xAI.
          // (The earlier paths left fal's breaker with a history of its own: it starts again, open.)
          await g.tdb.db.deleteFrom('provider_circuits').execute();
          await g.tdb.db.insertInto('provider_circuits').values({ provider: 'fal', model: 'grok-video', state: 'open', opened_at: new Date() }).execute();
          const skipping = await create(g, t, '/v1/videos/generate', {
            prompt: 'a lighthouse, fal skipped',
            model: 'grok-video',
            aspect_ratio: '16:9',
            duration: 1,
            resolution: '480p',
          });
          await finish(g, 'grok-video-breaker-skip', skipping, 'completed');
          await g.tdb.db.deleteFrom('provider_circuits').execute();

          // Canceled by its customer on the second route, after the failover.
          fal.down(['status'], json(502, { detail: 'Bad Gateway' }));
          xai.pendingPolls = 10_000;
          const canceled = await create(g, t, '/v1/videos/generate', {
            prompt: 'a lighthouse, canceled after the failover',
            model: 'grok-video',
            aspect_ratio: '16:9',
            duration: 1,
            resolution: '480p',
          });
          await waitFor(`${canceled} to be generating at xAI`, async () => {
            const row = await g.tdb.db.selectFrom('jobs').select('provider_ref').where('id', '=', canceled).executeTakeFirstOrThrow();
            return (row.provider_ref as { provider?: string } | null)?.provider === 'xai' ? true : undefined;
          });
          await g.gw.client.workflow.getHandle(canceled).cancel();
          await finish(g, 'grok-video-canceled-during-failover', canceled, 'failed');
        } finally {
          fal.up();
          xai.up();
          xai.pendingPolls = 2;
          clearInterval(cdn);
        }
      },
    );

    await group(
      'a Postgres outage as the workers see it',
      {},
      async (g) => {
        const t = await createTenant(g.tdb.db, 10_000);
        pgProxy.down();
        const id = await create(g, t, '/v1/images/generate', imageBody('started during an outage'));
        // The claim's retries wait longer than the local retry threshold: the workflow sleeps on a timer.
        await waitFor(
          `${id}'s first database step to back off on a timer`,
          async () => {
            const h = await g.gw.client.workflow.getHandle(id).fetchHistory();
            return h.events?.some((e) => e.timerStartedEventAttributes) ? true : undefined;
          },
          120_000,
          250,
        );
        pgProxy.up();
        await finish(g, 'image-db-step-backoff', id, 'completed');
      },
      { workerDbUrl: async (url) => pgProxy.url(url) },
    );

    await savePipelineAndEncryptedHistories();
  } finally {
    await pgProxy.close();
    await fal.close();
    await xai.close();
    await el.close();
    await remote.close();
  }
  // Every history is saved by a full run; a run of named groups saves theirs alone.
  const missing = only.length ? [] : Object.keys(savedHistories).filter((n) => !saved.has(n as HistoryName));
  if (missing.length) throw new Error(`not saved: ${missing.join(', ')}`);
  for (const [name, events] of saved) console.log(`${name}: ${events} events`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`save-histories failed: ${(err as Error).stack ?? String(err)}`);
    process.exit(1);
  },
);
