// Benchmark (not a test): the Temporal actions and history events one completed job costs, per job
// kind, on the real stack in the environment (eval "$(scripts/stack.sh up test)"). One job of each
// kind runs through the gateway over HTTP against the provider fakes (fal's queue, ElevenLabs), the
// four at once, each on its own workflow; the fake fal answers IN_QUEUE for the first 10% of a
// request's time, IN_PROGRESS until its time is up, then COMPLETED, so how often the job asks is the
// service's own polling. Default times: the video 120 s (the issue's "video job polled over 2
// minutes"), the actor kinds 30 s, the image 10 s; `scale=0.25` shortens them all.
//
// Actions follow Temporal Cloud's billing (docs.temporal.io/cloud/actions, read 2026-12-02): the
// workflow start; every activity start and retry; one per workflow task that ran local activities
// (they are billed per batch of one task, not each); timers started; signals sent or received; child
// workflow starts; search-attribute upserts; heartbeats that reach the server. Queries count too, but
// the benchmark makes none (a status poll reads Postgres). Everything but heartbeats is read from the
// job's history; heartbeats leave no event, so each activity attempt's calls to heartbeat() are
// counted as the SDK forwards them: the first at once, then at most one per throttle interval (80% of
// the step's heartbeat timeout: 24 s), the last pending one dropped when the attempt ends.
//
//   npm run build:all && npm run bench:actions [-- scale=1]
import { performance } from 'node:perf_hooks';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { temporal } from '@temporalio/proto';
import { createTenant, createTestDatabase, testConfig, type Tenant } from '../../test/support/stack.js';
import { api, startGateway, startWorkers } from '../../test/support/services.js';
import { startLiveFal } from '../../test/support/fake-providers/live-fal.js';
import { startFakeElevenLabs } from '../../test/support/fake-providers/elevenlabs.js';
import { insertActor, insertUpload, insertVoice } from '../../test/support/fixtures.js';
import { jobFinished } from '../../test/support/job-helpers.js';
import { loadavg, machine } from './processes.js';

function arg(name: string, fallback: number): number {
  const hit = process.argv.slice(2).find((a) => a.startsWith(`${name}=`));
  return hit ? Number(hit.slice(name.length + 1)) : fallback;
}

const SCALE = arg('scale', 1);
/** How long the fake fal takes per job kind (ms), by the endpoint it is asked on. */
const takesMs = (endpointId: string): number =>
  SCALE * (endpointId.includes('nano-banana') ? 10_000 : endpointId.includes('animate') || endpointId.includes('infinitalk') ? 30_000 : 120_000);
/** The SDK's heartbeat throttle for a 30 s heartbeat timeout (80% of it). */
const THROTTLE_MS = 24_000;

/** Heartbeats that reach the server, per workflow (the job id): counted from each attempt's heartbeat() calls. */
const heartbeatsSent = new Map<string, number>();
const countHeartbeats: ActivityInterceptorsFactory = (ctx) => ({
  inbound: {
    execute: async (input, next) => {
      const wf = ctx.info.workflowExecution?.workflowId ?? '';
      // The SDK's hook behind Context.heartbeat (protected in its types).
      const hook = ctx as unknown as { heartbeatFn: (details?: unknown) => void };
      const inner = hook.heartbeatFn;
      let lastSent = -Infinity;
      let pending = false;
      let sent = 0;
      hook.heartbeatFn = (details?: unknown) => {
        const now = performance.now();
        // A call held back by the throttle goes out when its window ends.
        if (pending && now - lastSent >= THROTTLE_MS) {
          sent++;
          lastSent += THROTTLE_MS;
          pending = false;
        }
        if (now - lastSent >= THROTTLE_MS) {
          sent++;
          lastSent = now;
        } else pending = true;
        inner(details);
      };
      try {
        return await next(input);
      } finally {
        heartbeatsSent.set(wf, (heartbeatsSent.get(wf) ?? 0) + sent);
      }
    },
  },
});

interface Counts {
  events: number;
  workflowTasks: number;
  activities: number;
  activityAttempts: number;
  localActivityTasks: number;
  timers: number;
  signals: number;
  upserts: number;
  heartbeats: number;
  actions: number;
}

function countHistory(events: temporal.api.history.v1.IHistoryEvent[], heartbeats: number): Counts {
  const n = (has: (e: temporal.api.history.v1.IHistoryEvent) => unknown) => events.filter(has).length;
  const markers = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
  // An attempt the server retried leaves only its last start, which carries the attempt number.
  const activityAttempts = events.reduce((s, e) => s + (e.activityTaskStartedEventAttributes ? (e.activityTaskStartedEventAttributes.attempt ?? 1) : 0), 0);
  const c = {
    events: events.length,
    workflowTasks: n((e) => e.workflowTaskCompletedEventAttributes),
    activities: n((e) => e.activityTaskScheduledEventAttributes),
    activityAttempts,
    localActivityTasks: new Set(markers.map((e) => String(e.markerRecordedEventAttributes!.workflowTaskCompletedEventId))).size,
    timers: n((e) => e.timerStartedEventAttributes),
    signals: n((e) => e.workflowExecutionSignaledEventAttributes) + n((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes),
    children: n((e) => e.startChildWorkflowExecutionInitiatedEventAttributes),
    upserts: n((e) => e.upsertWorkflowSearchAttributesEventAttributes),
    heartbeats,
  };
  const actions = 1 + c.activityAttempts + c.localActivityTasks + c.timers + c.signals + c.children + c.upserts + c.heartbeats;
  return { ...c, actions };
}

async function main(): Promise<void> {
  const load0 = loadavg();
  const started = performance.now();
  const tdb = await createTestDatabase();
  const live = await startLiveFal();
  const eleven = await startFakeElevenLabs();
  // Each status call answers from the request's age (fal's own queue is what the service polls).
  const fal = live.fal;
  const submittedAt = new Map<string, number>();
  const states = fal.states;
  const set = states.set.bind(states);
  const get = states.get.bind(states);
  states.set = (id, st) => {
    if (!submittedAt.has(id)) submittedAt.set(id, performance.now());
    return set(id, st);
  };
  states.get = (id) => {
    const st = get(id);
    const at = submittedAt.get(id);
    if (st && at !== undefined) {
      const age = performance.now() - at;
      const total = takesMs(st.endpointId);
      st.step = age < total * 0.1 ? 0 : age < total ? 1 : 3;
    }
    return st;
  };
  fal.flow = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
  const config = testConfig(tdb.url, {
    ...live.env,
    ELEVENLABS_API_KEY: eleven.key,
    ELEVENLABS_BASE_URL: eleven.url,
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
  });
  const gw = await startGateway(config, tdb.db);
  const workers = await startWorkers(config, tdb.db, 'workflows,io,fetch,provider:fal,provider:elevenlabs', { activityInterceptors: [countHeartbeats] });
  try {
    const t: Tenant = await createTenant(tdb.db, 100_000);
    const c = api(gw.baseUrl, t.apiKey);
    const voice = await insertVoice(tdb.db, { providerVoiceId: [...eleven.voices][0]! });
    const actor = await insertActor(tdb.db, gw.storage, { defaultVoiceId: voice });
    const image = await insertUpload(tdb.db, gw.storage, t, 'image');
    const video = await insertUpload(tdb.db, gw.storage, t, 'video');
    const project_id = t.projectId;
    const creates: [string, string, Record<string, unknown>][] = [
      ['image', '/v1/images/generate', { project_id, prompt: 'a fox in snow', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 }],
      ['video', '/v1/videos/generate', { project_id, prompt: 'waves at dusk', model: 'grok-video', aspect_ratio: '16:9', duration: 1, resolution: '480p' }],
      ['replace_actor', '/v1/replace-actors/generations', { project_id, image_file_id: image, video_file_id: video, duration: 3 }],
      ['talking_actor', '/v1/talking-actors/generate', { project_id, actor_id: actor, script: 'Hello there. This is a benchmark.' }],
    ];
    const rows = await Promise.all(
      creates.map(async ([kind, path, body]) => {
        const t0 = performance.now();
        const r = await c.post(path, body);
        if (r.status !== 200) throw new Error(`${kind}: ${r.status} ${r.text}`);
        const id = r.body.data.id as string;
        const row = await jobFinished(tdb.db, id, 15 * 60_000);
        const seconds = (performance.now() - t0) / 1000;
        if (row.status !== 'completed') throw new Error(`${kind} ${id} ended ${row.status}: ${JSON.stringify(row.error)}`);
        const history = await gw.client.workflow.getHandle(id).fetchHistory();
        return { kind, id, seconds, counts: countHistory(history.events ?? [], heartbeatsSent.get(id) ?? 0) };
      }),
    );
    const load1 = loadavg();
    console.log(`bench:actions  ${machine()}; load average ${load0} → ${load1}; ${((performance.now() - started) / 1000).toFixed(0)} s`);
    console.log(
      `fake fal's time per request: image ${takesMs('nano-banana') / 1000} s, video ${takesMs('video') / 1000} s, actor kinds ${takesMs('animate') / 1000} s (scale=${SCALE})`,
    );
    console.log(
      'actions = workflow start + activity attempts + workflow tasks with local activities + timers + signals + child starts + search-attribute upserts + heartbeats sent (docs.temporal.io/cloud/actions)\n',
    );
    const cols = ['kind', 'job s', 'actions', 'events', 'wf tasks', 'activities', 'attempts', 'LA tasks', 'timers', 'signals', 'upserts', 'heartbeats'];
    console.log(cols.map((h) => h.padStart(11)).join(''));
    for (const r of rows) {
      const k = r.counts;
      const cells = [
        r.kind,
        r.seconds.toFixed(0),
        k.actions,
        k.events,
        k.workflowTasks,
        k.activities,
        k.activityAttempts,
        k.localActivityTasks,
        k.timers,
        k.signals,
        k.upserts,
        k.heartbeats,
      ];
      console.log(cells.map((v) => String(v).padStart(11)).join(''));
    }
  } finally {
    await workers.stop();
    await gw.close();
    await Promise.all([live.close(), eleven.close()]);
    await tdb.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
