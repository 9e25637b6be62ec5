// Regenerates the saved workflow histories that the replay test (test/workflows/replay.test.ts)
// runs through the current workflow code: one completed job of each kind, plus a failed and a
// canceled image job, run on the real stack with the local renderer.
//
//   eval "$(scripts/stack.sh up test)" && npm run build && node dist/scripts/save-histories.js
//
// Regenerate only on purpose (a deliberate, versioned workflow change): the point of the saved
// histories is that workflow code which can no longer replay them fails the test. It writes the
// current build's histories into test/workflows/histories/; test/workflows/histories/v1/ holds the
// ones the build before the LOCAL_DB_STEPS patch recorded (jobs of that build may still be running),
// which nothing regenerates. At the next versioned change, move these into a folder of their own
// the same way and list it in the replay test.
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { createTestDatabase, createTenant, testConfig, waitFor } from '../test/support/stack.js';
import { api, startGateway, startWorkers } from '../test/support/services.js';
import { insertActor, insertUpload, insertVoice } from '../test/support/fixtures.js';

const outDir = fileURLToPath(new URL('../../test/workflows/histories/', import.meta.url));

async function main() {
  const tdb = await createTestDatabase();
  const config = testConfig(tdb.url, {
    RECONCILE_INTERVAL_MS: '3600000',
    LOCAL_RENDER_FAULTS: 'true',
    LOCAL_RENDER_LATENCY_MS: '1500',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
  });
  const gw = await startGateway(config, tdb.db);
  const workers = await startWorkers(config, tdb.db);
  try {
    const t = await createTenant(tdb.db, 10_000);
    const c = api(gw.baseUrl, t.apiKey);
    const voice = await insertVoice(tdb.db);
    const actor = await insertActor(tdb.db, gw.storage, { defaultVoiceId: voice });
    const startFrame = await insertUpload(tdb.db, gw.storage, t, 'image');
    const image = await insertUpload(tdb.db, gw.storage, t, 'image');
    const video = await insertUpload(tdb.db, gw.storage, t, 'video');

    const jobs: { name: string; path: string; body: Record<string, unknown>; expect: 'completed' | 'failed'; cancel?: true }[] = [
      { name: 'image', path: '/v1/images/generate', body: { project_id: t.projectId, prompt: 'a fox in snow', model: 'nano-banana-2', aspect_ratio: '1:1', count: 2 }, expect: 'completed' },
      {
        name: 'video',
        path: '/v1/videos/generate',
        body: { project_id: t.projectId, prompt: 'waves at dusk', model: 'seedance-1.5', aspect_ratio: '9:16', duration: 4, resolution: '480p', start_frame_file_id: startFrame },
        expect: 'completed',
      },
      { name: 'replace_actor', path: '/v1/replace-actors/generations', body: { project_id: t.projectId, image_file_id: image, video_file_id: video, duration: 3 }, expect: 'completed' },
      { name: 'talking_actor', path: '/v1/talking-actors/generate', body: { project_id: t.projectId, actor_id: actor, script: 'Hello there. This is a replay test.' }, expect: 'completed' },
      { name: 'image-failed', path: '/v1/images/generate', body: { project_id: t.projectId, prompt: 'broken [fail:terminal]', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 }, expect: 'failed' },
      { name: 'image-canceled', path: '/v1/images/generate', body: { project_id: t.projectId, prompt: 'canceled', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 }, expect: 'failed', cancel: true },
    ];

    await mkdir(outDir, { recursive: true });
    for (const job of jobs) {
      const created = await c.post(job.path, job.body);
      if (created.status !== 200) throw new Error(`${job.name}: create answered ${created.status}: ${created.text}`);
      const id = created.body.data.id as string;
      if (job.cancel) {
        await waitFor(`${id} to be generating`, async () => {
          const row = await tdb.db.selectFrom('jobs').select('provider_ref').where('id', '=', id).executeTakeFirstOrThrow();
          return row.provider_ref !== null ? true : undefined;
        });
        await gw.client.workflow.getHandle(id).cancel();
      }
      const status = await waitFor(
        `${job.name} job ${id} to finish`,
        async () => {
          const row = await tdb.db.selectFrom('jobs').select('status').where('id', '=', id).executeTakeFirstOrThrow();
          return row.status === 'completed' || row.status === 'failed' ? row.status : undefined;
        },
        180_000,
        200,
      );
      if (status !== job.expect) throw new Error(`${job.name} job ${id} ended ${status}, expected ${job.expect}`);
      const handle = gw.client.workflow.getHandle(id);
      await waitFor(`${id}'s workflow to close`, async () => ((await handle.describe()).status.name !== 'RUNNING' ? true : undefined));
      const history = await handle.fetchHistory();
      const file = `${outDir}${job.name}.json`;
      await writeFile(file, `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 1)}\n`);
      console.log(`saved ${history.events?.length ?? 0} events of ${job.name} job ${id} to ${file}`);
    }
  } finally {
    await workers.stop();
    await gw.close();
    await tdb.drop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`save-histories failed: ${(err as Error).stack ?? String(err)}`);
    process.exit(1);
  },
);
