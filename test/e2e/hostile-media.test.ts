// A tenant's crafted motion video on the real stack: uploaded through the gateway, sent as a
// replace-actor job on fal's route (the local fal queue as a live provider), so the provider conform
// path (activities/providers/conform.ts, through media-tools.ts) is the one that reads it, in a
// provider:fal worker of its own whose memory is sampled while the job runs. An MP4 declaring
// 30,000×30,000 frames, and one declaring 16,000×16,000 (a size ffmpeg itself would decode, ~384 MB
// a frame), each fail the job with an error naming the declared size, refunded in full, with no
// request to fal, while the worker's process tree stays under RSS_BOUND_MB.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { createTenant, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, type InProcessGateway as Gateway } from '../support/services.js';
import { insertUpload } from '../support/fixtures.js';
import { spawnWorkerProcess, startFailoverStack, type FailoverStack, type WorkerProcess } from '../support/failover-stack.js';
import { jobFinished, jobLedger, uploadFile } from '../support/job-helpers.js';
import { oversizedMp4 } from '../support/oversized-video.js';

/** The provider:fal worker process and the tools it starts, together, never above this (resident set, MB). */
const RSS_BOUND_MB = 700;

let stack: FailoverStack;
let tdb: TestDatabase;
let gw: Gateway;
let worker: WorkerProcess;

before(async () => {
  // Workflows, io and fetch in this process; fal's provider steps (the conform step) in a worker process of their own.
  stack = await startFailoverStack({ roles: 'workflows,io,fetch' });
  ({ tdb, gw } = stack);
  worker = await spawnWorkerProcess(stack, 'provider:fal');
});

after(async () => {
  worker?.child.kill('SIGTERM');
  await worker?.exited;
  await stack?.close();
});

/** Resident set of a process and all its descendants (children of each of its threads), in MB (Linux /proc). */
async function treeRssMb(pid: number): Promise<number> {
  let kb = 0;
  const queue = [pid];
  while (queue.length) {
    const p = queue.pop()!;
    const status = await readFile(`/proc/${p}/status`, 'utf8').catch(() => '');
    kb += Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    for (const task of await readdir(`/proc/${p}/task`).catch(() => [] as string[])) {
      const children = await readFile(`/proc/${p}/task/${task}/children`, 'utf8').catch(() => '');
      queue.push(...children.split(' ').filter(Boolean).map(Number));
    }
  }
  return kb / 1024;
}

/** Samples the worker's tree every 20 ms until `until` settles; answers its result and the peak. */
async function sampling<T>(pid: number, until: Promise<T>): Promise<{ result: T; peakMb: number; samples: number }> {
  let done = false;
  let peakMb = 0;
  let samples = 0;
  const sampler = (async () => {
    while (!done) {
      peakMb = Math.max(peakMb, await treeRssMb(pid));
      samples++;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  try {
    return { result: await until, peakMb, samples };
  } finally {
    done = true;
    await sampler;
  }
}

const uploadVideo = (t: Tenant, bytes: Buffer): Promise<string> => uploadFile(gw.baseUrl, t, bytes, 'video/mp4', 'motion.mp4');

describe('a crafted motion video on the provider conform path', () => {
  for (const [side, declared] of [
    [30_000, /^the motion video declares 30000×30000 frames \(900\.0 Mpx\); the limit is 16\.8 Mpx$/],
    [16_000, /^the motion video declares 16000×16000 frames \(256\.0 Mpx\); the limit is 16\.8 Mpx$/],
  ] as const) {
    test(`${side}×${side} frames: the job fails naming the size, refunded, nothing sent to fal, the worker under ${RSS_BOUND_MB} MB`, async () => {
      const t = await createTenant(tdb.db, 1000);
      const baselineMb = await treeRssMb(worker.child.pid!);
      const duration = 3;
      const created = await api(gw.baseUrl, t.apiKey).post('/v1/replace-actors/generations', {
        project_id: t.projectId,
        image_file_id: await insertUpload(tdb.db, gw.storage, t, 'image'),
        video_file_id: await uploadVideo(t, await oversizedMp4(side, side)),
        duration,
      });
      assert.equal(created.status, 200, created.text);
      const id = created.body.data.id as string;
      const submitsBefore = stack.fal.requestsOf('submit').length;

      const { result: row, peakMb, samples } = await sampling(worker.child.pid!, jobFinished(tdb.db, id));
      console.log(
        `[hostile-media] ${side}×${side}: worker tree RSS baseline ${baselineMb.toFixed(0)} MB, peak ${peakMb.toFixed(0)} MB over ${samples} samples (bound ${RSS_BOUND_MB} MB)`,
      );

      assert.equal(row.status, 'failed');
      const r = await api(gw.baseUrl, t.apiKey).get(`/v1/replace-actors/generations/${id}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data.error?.code, 'generation_failed');
      assert.match(String(r.body.data.error?.message), declared);
      assert.equal(stack.fal.requestsOf('submit').length, submitsBefore, 'refused before fal was asked for anything');

      const price = 8 * duration;
      assert.deepEqual(
        await jobLedger(tdb.db, id),
        [
          ['charge', -price],
          ['refund', price],
        ],
        'charged once, refunded once',
      );
      assert.equal(await creditsOf(tdb.db, t), 1000);

      assert.ok(samples >= 3, `the worker was sampled while the job ran (${samples} samples)`);
      assert.ok(peakMb < RSS_BOUND_MB, `worker tree peak RSS ${peakMb.toFixed(0)} MB, bound ${RSS_BOUND_MB} MB`);
    });
  }
});
