// The production topology as `scripts/stack.sh up prod` runs it (started or reused by scripts/test.sh
// before this suite): Temporal server 1.32.0 with Postgres persistence and visibility behind its own
// Web UI, MinIO, two gateway processes and worker fleets split by role. Everything here goes over the
// network to those processes; the suite only adds tenants and fixtures to the profile's database and
// bucket. Jobs of every kind complete; a revoked key and the rate limits hold on both gateways; a
// provider worker stopped with SIGTERM mid-job and another killed with SIGKILL mid-job come back with
// the next `stack.sh up prod`, and every job completes with exact credits.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { dirname, join } from 'node:path';
import { connectClient, connectNative } from '../../shared/temporal-connection.js';
import type { Database } from '../../db/index.js';
import { createStorage, type Storage } from '../../shared/storage.js';
import { ledgerForJob } from '../support/ledger.js';
import { revokeApiKey } from '../../db/repos/workspaces.js';
import { createTenant, waitFor, type Tenant } from '../support/stack.js';
import { api, creditsOf } from '../support/services.js';
import { insertActor, insertUpload, insertVoice } from '../support/fixtures.js';
import { openProfileSuite, processAlive, type ProfileSuite } from '../support/profile-stack.js';
import { jobFinished } from '../support/job-helpers.js';

let suite: ProfileSuite;
let stack: ProfileSuite['stack'];
let db: Database;
let storage: Storage;
let temporal: Client;

before(
  async () => {
    suite = await openProfileSuite('prod');
    ({ stack, db, temporal } = suite);
    storage = createStorage(stack.config);
  },
  { timeout: 4_200_000 },
);

after(() => suite?.close());

const gateway = (i: 0 | 1) => stack.gateways[i]!;

/** Waits on the job's row (no gateway round trips, so no rate-limit budget is spent while waiting). */
const waitForFinished = (id: string, timeoutMs = 240_000) => jobFinished(db, id, timeoutMs);

/** Every job completed, its ledger nets to its price, and the workspace paid exactly the sum. */
async function assertCompletedWithExactCredits(t: Tenant, startCredits: number, ids: string[]) {
  let total = 0;
  for (const id of ids) {
    const row = await waitForFinished(id);
    assert.equal(row.status, 'completed', `${id}: ${JSON.stringify(row.error)}`);
    const net = (await ledgerForJob(db, id)).reduce((sum, e) => sum - e.delta, 0);
    assert.equal(net, row.price, `${id} is charged its price exactly once`);
    total += row.price;
  }
  assert.equal(await creditsOf(db, t), startCredits - total);
}

const longVideo = (t: Tenant, prompt: string) => ({
  project_id: t.projectId,
  prompt,
  model: 'seedance-1.5',
  aspect_ratio: '16:9',
  duration: 12,
  resolution: '1080p',
});
const image = (t: Tenant, prompt: string) => ({ project_id: t.projectId, prompt, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });

async function create(gw: string, t: Tenant, path: string, body: Record<string, unknown>): Promise<string> {
  const res = await api(gw, t.apiKey).post(path, body);
  assert.equal(res.status, 200, `${path}: ${res.text}`);
  return res.body.data.id as string;
}

describe('the prod profile', () => {
  test('is a standalone Temporal server 1.32.0 on Postgres, reached through its Web UI, with our search attributes', async () => {
    const info = (await (await fetch(`${stack.vars.TEMPORAL_UI_URL}/api/v1/cluster-info`)).json()) as Record<string, unknown>;
    assert.equal(info.serverVersion, '1.32.0');
    assert.equal(info.persistenceStore, 'postgres12');
    assert.equal(info.visibilityStore, 'postgres12');
    const attributes = await temporal.connection.operatorService.listSearchAttributes({ namespace: 'default' });
    for (const name of ['WorkspaceId', 'ProjectId', 'JobKind', 'MediaModel', 'JobStatus', 'ServingProvider', 'JobPriority']) {
      assert.ok(attributes.customAttributes?.[name] !== undefined, `search attribute ${name} is registered`);
    }
    const page = await fetch(`${stack.vars.TEMPORAL_UI_URL}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<html/);
  });

  test("requires mutual TLS: plain and foreign-certificate clients are refused, a worker with the intruder's pair fails to start naming its file", async () => {
    const env = await stack.environment('worker-core');
    assert.equal(env.TEMPORAL_TLS_CERT_FILE, stack.vars.TEMPORAL_TLS_CERT_FILE, 'the workers connect with the profile client pair');
    const certs = dirname(stack.vars.TEMPORAL_TLS_CA_FILE!);
    await assert.rejects(
      connectClient({ ...stack.config, TEMPORAL_TLS_CA_FILE: undefined, TEMPORAL_TLS_CERT_FILE: undefined, TEMPORAL_TLS_KEY_FILE: undefined }),
    );
    const intruder = { ...stack.config, TEMPORAL_TLS_CERT_FILE: join(certs, 'intruder.pem'), TEMPORAL_TLS_KEY_FILE: join(certs, 'intruder.key') };
    await assert.rejects(connectNative(intruder), (err: Error) => {
      assert.match(err.message, /the TLS handshake failed or the frontend closed the connection/);
      assert.ok(err.message.includes(join(certs, 'intruder.pem')), err.message);
      return true;
    });
  });

  test('runs two gateways and the worker fleets by role, each its own process', async () => {
    const roles: Record<string, string> = {
      'worker-core': '["workflows","io","reconciler"]',
      'worker-fetch': '["fetch"]',
      'worker-local-1': '["provider:local"]',
      'worker-local-2': '["provider:local"]',
      'worker-fal': '["provider:fal"]',
      'worker-xai': '["provider:xai"]',
    };
    const pids = new Set<number>();
    for (const [name, list] of Object.entries(roles)) {
      const pid = await stack.pid(name);
      assert.ok(processAlive(pid), `${name} runs`);
      pids.add(pid);
      assert.ok((await stack.log(name)).includes(`"roles":${list}`), `${name} polls ${list}`);
    }
    for (const i of [0, 1] as const) {
      assert.equal((await fetch(`${gateway(i)}/readyz`)).status, 200);
      pids.add(await stack.pid(`gateway-${i + 1}`));
    }
    assert.equal(pids.size, 8);
  });

  test('jobs of every kind complete, created on one gateway and read on the other, with exact credits', async () => {
    const t = await createTenant(db, 1000);
    const voiceId = await insertVoice(db);
    const ids = [
      await create(gateway(0), t, '/v1/images/generate', image(t, 'prod profile image')),
      await create(gateway(1), t, '/v1/videos/generate', {
        project_id: t.projectId,
        prompt: 'prod profile video',
        model: 'seedance-1.5',
        aspect_ratio: '9:16',
        duration: 4,
        resolution: '480p',
      }),
      await create(gateway(0), t, '/v1/replace-actors/generations', {
        project_id: t.projectId,
        image_file_id: await insertUpload(db, storage, t, 'image'),
        video_file_id: await insertUpload(db, storage, t, 'video'),
        duration: 3,
      }),
      await create(gateway(1), t, '/v1/talking-actors/generate', {
        project_id: t.projectId,
        actor_id: await insertActor(db, storage, { defaultVoiceId: voiceId }),
        voice_id: voiceId,
        script: 'Hello from the production topology.',
      }),
    ];
    await assertCompletedWithExactCredits(t, 1000, ids);
    const paths = ['/v1/images', '/v1/videos', '/v1/replace-actors/generations', '/v1/talking-actors'];
    for (const [i, id] of ids.entries()) {
      const other = api(gateway(i % 2 === 0 ? 1 : 0), t.apiKey);
      assert.equal((await other.get(`${paths[i]}/${id}`)).body.data.status, 'completed');
      const url = await other.get(`${paths[i]}/${id}/url`);
      assert.equal(url.status, 200, url.text);
      assert.equal((await fetch(url.body.data.url)).status, 200, `${id}'s output downloads`);
    }
    // The workflows are listed by our search attributes in the server's SQL visibility.
    const listed = await waitFor(
      'the jobs in visibility',
      async () => {
        const found: string[] = [];
        for await (const wf of temporal.workflow.list({ query: `WorkspaceId = '${t.workspaceId}' AND JobStatus = 'completed'` })) found.push(wf.workflowId);
        return found.length === ids.length ? found : undefined;
      },
      30_000,
      500,
    );
    assert.deepEqual(listed.sort(), [...ids].sort());
  });

  test('a revoked key is refused on the next request by both gateways', async () => {
    const t = await createTenant(db);
    for (const i of [0, 1] as const) assert.equal((await api(gateway(i), t.apiKey).get('/v1/projects')).status, 200);
    await revokeApiKey(db, { workspaceId: t.workspaceId, keyId: t.apiKeyId, actorEmail: t.ownerEmail });
    for (const i of [0, 1] as const) {
      const res = await api(gateway(i), t.apiKey).get('/v1/projects');
      assert.equal(res.status, 401, `gateway-${i + 1}: ${res.text}`);
      assert.equal(res.body.error.code, 'unauthorized');
    }
  });

  test('both gateways share one rate-limit budget per key: never more than the limit in all', async () => {
    const t = await createTenant(db);
    const first = await api(gateway(0), t.apiKey).get('/v1/voices');
    assert.equal(first.status, 200);
    const limit = Number(first.headers.get('ratelimit-limit'));
    assert.ok(limit > 0, 'RateLimit-Limit is set');
    let admitted = 1;
    const refusedBy = new Set<number>();
    // Alternate between the gateways, twice the limit in all, well inside one window.
    for (let n = 1; n < 2 * limit; n++) {
      const i = (n % 2) as 0 | 1;
      const res = await api(gateway(i), t.apiKey).get('/v1/voices');
      if (res.status === 200) admitted++;
      else {
        assert.equal(res.status, 429, res.text);
        assert.equal(res.body.error.code, 'rate_limited');
        refusedBy.add(i);
      }
    }
    assert.ok(admitted <= limit, `admitted ${admitted} with a limit of ${limit}`);
    // Tokens leased by one replica and left unspent are the only shortfall: a few at most.
    assert.ok(admitted >= limit - 5, `admitted ${admitted} with a limit of ${limit}`);
    assert.deepEqual([...refusedBy].sort(), [0, 1], 'both gateways refuse once the shared budget is spent');
  });

  test('a provider worker stopped with SIGTERM and another killed with SIGKILL mid-job: restarted, every job completes with exact credits', async () => {
    const t = await createTenant(db, 1000);
    const providers = ['worker-local-1', 'worker-local-2'];
    const pids = new Map<number, string>();
    for (const name of providers) pids.set(await stack.pid(name), name);
    const gatewayPids = [await stack.pid('gateway-1'), await stack.pid('gateway-2')];
    const ids: string[] = [];

    /** Waits until the job's render (the local provider's submit) runs on a provider worker; returns that worker. */
    const renderingOn = (id: string) =>
      waitFor(
        `${id}'s render to be in flight on a provider worker`,
        async () => {
          const desc = await temporal.workflow.getHandle(id).describe();
          const submit = (desc.raw.pendingActivities ?? []).find((a) => a.activityType?.name === 'submitAndCheck' && a.lastWorkerIdentity);
          const pid = Number(submit?.lastWorkerIdentity?.split('@')[0]);
          return pids.has(pid) ? pid : undefined;
        },
        120_000,
        50,
      );

    // SIGTERM: the worker stops polling, lets its in-flight render finish, and exits.
    const a = await create(gateway(0), t, '/v1/videos/generate', longVideo(t, 'stopped gracefully'));
    ids.push(a, await create(gateway(1), t, '/v1/images/generate', image(t, 'beside the first')));
    const termed = await renderingOn(a);
    process.kill(termed, 'SIGTERM');
    await waitFor(`${pids.get(termed)} to exit after SIGTERM`, () => !processAlive(termed), 90_000, 100);
    const termLog = await stack.log(pids.get(termed)!);
    assert.match(termLog, /shutting down/);
    assert.match(termLog, /"msg":"worker stopped"/, 'the worker drained and stopped cleanly');

    // SIGKILL: the other provider worker dies mid-render; Temporal retries the render after its
    // heartbeat timeout, on whichever provider worker polls by then.
    const b = await create(gateway(1), t, '/v1/videos/generate', longVideo(t, 'killed mid-render'));
    ids.push(b);
    const killed = await renderingOn(b);
    assert.notEqual(killed, termed);
    process.kill(killed, 'SIGKILL');
    await waitFor(`${pids.get(killed)} to die`, () => !processAlive(killed), 30_000, 50);
    // No provider worker runs now: these wait in the provider queue.
    ids.push(await create(gateway(0), t, '/v1/images/generate', image(t, 'queued while no provider runs')));

    const up = await stack.up();
    assert.equal(up.code, 0, up.stderr);
    for (const name of providers) assert.match(up.stderr, new RegExp(`${name}: started`), up.stderr);
    for (const name of ['gateway-1', 'gateway-2', 'worker-core', 'worker-fetch']) assert.match(up.stderr, new RegExp(`${name}: reusing`), up.stderr);
    assert.deepEqual([await stack.pid('gateway-1'), await stack.pid('gateway-2')], gatewayPids, 'the gateways kept running');

    await assertCompletedWithExactCredits(t, 1000, ids);
    // The killed render ran again: its submit started a second attempt.
    const events = (await temporal.workflow.getHandle(b).fetchHistory()).events ?? [];
    const submits = new Set(
      events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'submitAndCheck').map((e) => String(e.eventId)),
    );
    const attempts = events
      .filter((e) => submits.has(String(e.activityTaskStartedEventAttributes?.scheduledEventId)))
      .map((e) => e.activityTaskStartedEventAttributes!.attempt ?? 1);
    assert.ok(
      attempts.some((n) => n >= 2),
      `the killed render was retried (attempts ${attempts.join(', ')})`,
    );
  });
});
