// GET /v1/queue (extension): the current wait per model and priority. Jobs wait in this service's
// queues from their create until their request reaches the provider; each provider's queue is
// shared fairly by workspace (Temporal fairness, one key per workspace) and served by priority
// first (shared/task-priority.ts). Per public model and priority the answer says how many jobs
// wait (the key's workspace's and everyone's), the waits of the jobs submitted in the last 15
// minutes (p50 / p90, create → submit), and an estimate for a new job of the workspace.
//
// The fleet-wide part (two grouped reads over the queue indexes, db/repos/queue.ts) is cached per
// replica for a few seconds, so the cost does not grow with the callers; the workspace's part is
// cut from the same read, with its fair-share weight (a primary-key read).
import { z } from 'zod';
import { authOf, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { kinds as jobKinds } from './jobs/kinds.js';
import type { Database } from '../../db/index.js';
import { prioritiesAbove, recentWaits, waitingCounts, workspaceWeight, type RecentWaits, type WaitingCount } from '../../db/repos/queue.js';
import { jobPriorities, type JobPriority } from '../../shared/job-model.js';
import { providerFor } from '../../shared/routing.js';
import type { Config } from '../../shared/config.js';

/** The window of the recent waits. */
export const RECENT_WAIT_SECONDS = 15 * 60;
/** How long one read of the queues serves every request of a replica. */
export const QUEUE_CACHE_MS = 5_000;

const seconds = (what: string) => z.number().nonnegative().describe(what);

const queueEntrySchema = z.object({
  model: z.string().describe('the public model name'),
  priority: z.enum(jobPriorities).describe('the job priority this entry is about'),
  provider: z
    .string()
    .nullable()
    .describe("the provider queue new jobs of the model wait in ('local': the local renderer); null when the model is not served here"),
  waiting: z
    .object({
      workspace: z.number().int().describe("this workspace's jobs of the model and priority created and not yet submitted to the provider"),
      total: z.number().int().describe("every workspace's such jobs"),
    })
    .describe("jobs waiting in this service's queues (created, not yet submitted to their provider)"),
  recent_wait: z
    .object({
      jobs: z.number().int().describe('jobs of the model and priority submitted in the window'),
      p50_seconds: seconds('median wait from create to submit'),
      p90_seconds: seconds('90th percentile of that wait'),
    })
    .nullable()
    .describe(`the waits (create → submit to the provider) of the jobs submitted in the last ${RECENT_WAIT_SECONDS / 60} minutes; null when none was`),
  estimated_wait_seconds: z
    .number()
    .nonnegative()
    .nullable()
    .describe(
      "estimated wait before a job of this workspace created now reaches the provider: 0 when nothing waits ahead of it; else the jobs ahead of it (every waiting job of a higher priority; of its priority, this workspace's and the other waiting workspaces' turns until its own, by their fair-share weights) over the provider's submit rate in the window; null when jobs wait but none was submitted in the window (no rate to go by)",
    ),
});
export type QueueEntry = z.infer<typeof queueEntrySchema>;

const publicModels = () => jobKinds.flatMap((k) => k.models);

// An enum in the document, so a client (and a contract fuzzer) knows which values are valid.
const queueQuery = z.object({
  model: z
    .enum(publicModels() as [string, ...string[]])
    .optional()
    .describe('only this model (a public model: GET /v1/models lists them)'),
});

/** One read of the fleet's queues. */
interface QueueSnapshot {
  waiting: WaitingCount[];
  recent: RecentWaits[];
}

/**
 * The entries of every public model (or `only`) and priority for workspace `me` (its fair-share
 * weight `me.weight`). Estimate: priorities go strictly in order and, within one, the waiting
 * workspaces take turns in proportion to their weights, so ahead of a new job are every waiting job
 * of a higher priority, its workspace's waiting jobs of its priority (n) and, from each other
 * workspace j with jobs of that priority, up to (n + 1) × weight(j) / weight(me) of them (rounded
 * up); the provider submits `rate` jobs a second (all priorities, the last window), so the wait is
 * about ahead / rate.
 */
export function queueEntries(
  config: Parameters<typeof providerFor>[0],
  snap: QueueSnapshot,
  me: { workspaceId: string; weight: number },
  only?: string,
): QueueEntry[] {
  const workspaceId = me.workspaceId;
  const models = publicModels().filter((m) => only === undefined || m === only);
  const out: QueueEntry[] = [];
  for (const model of models) {
    const provider = providerFor(config, model) ?? null;
    const submittedOnProvider = snap.recent.filter((r) => r.provider === provider).reduce((a, r) => a + r.submitted, 0);
    const rate = submittedOnProvider / RECENT_WAIT_SECONDS;
    for (const priority of jobPriorities) {
      const mine = (w: WaitingCount) => w.model === model && w.priority === priority;
      const waitingHere = snap.waiting.filter(mine);
      const recent = snap.recent.find((r) => r.provider === provider && r.model === model && r.priority === priority);
      // Ahead of a new job on the provider's queue (any model): every waiting job of a higher
      // priority, and of its own priority the workspace's and the others' turns until its own.
      const above = new Set<JobPriority>(prioritiesAbove(priority));
      const same = new Map<string, { n: number; weight: number }>();
      let jobsAhead = 0;
      for (const w of snap.waiting) {
        if (w.provider !== provider) continue;
        if (above.has(w.priority)) jobsAhead += w.waiting;
        if (w.priority !== priority) continue;
        const p = same.get(w.workspaceId) ?? { n: 0, weight: w.weight };
        same.set(w.workspaceId, { n: p.n + w.waiting, weight: Math.max(p.weight, w.weight) });
      }
      const own = same.get(workspaceId)?.n ?? 0;
      jobsAhead += own;
      for (const [ws, { n, weight }] of same) if (ws !== workspaceId) jobsAhead += Math.min(n, Math.ceil(((own + 1) * weight) / me.weight));
      out.push({
        model,
        priority,
        provider,
        waiting: {
          workspace: waitingHere.filter((w) => w.workspaceId === workspaceId).reduce((a, w) => a + w.waiting, 0),
          total: waitingHere.reduce((a, w) => a + w.waiting, 0),
        },
        recent_wait: recent ? { jobs: recent.submitted, p50_seconds: round(recent.p50Seconds), p90_seconds: round(recent.p90Seconds) } : null,
        estimated_wait_seconds: jobsAhead === 0 ? 0 : rate > 0 ? round(jobsAhead / rate) : null,
      });
    }
  }
  return out;
}

const round = (s: number) => Math.round(s * 10) / 10;

/** The fleet's queues, read at most once per QUEUE_CACHE_MS per replica (concurrent callers share the read). */
function queueSnapshots(db: Database, ttlMs = QUEUE_CACHE_MS): () => Promise<QueueSnapshot> {
  let cached: { at: number; value: Promise<QueueSnapshot> } | null = null;
  return () => {
    const now = Date.now();
    if (!cached || now - cached.at >= ttlMs) {
      const value = Promise.all([waitingCounts(db), recentWaits(db, RECENT_WAIT_SECONDS)]).then(([waiting, recent]) => ({ waiting, recent }));
      cached = { at: now, value };
      // A failed read is not served to the next callers.
      value.catch(() => {
        if (cached?.value === value) cached = null;
      });
    }
    return cached.value;
  };
}

interface QueueServices {
  config: Config;
  db: Database;
  snapshot: () => Promise<QueueSnapshot>;
}

/** GET /v1/queue, declared once. */
export const queueEndpoints = new Endpoints<QueueServices>().add({
  method: 'get',
  path: '/v1/queue',
  summary: 'Current queue wait per model and priority (extension)',
  description: `Per public model and priority: the jobs waiting (this workspace's and everyone's), the recent waits (last ${RECENT_WAIT_SECONDS / 60} minutes, create → submit to the provider) and the estimated wait of a new job. Read at most every ${QUEUE_CACHE_MS / 1000} seconds per gateway replica.`,
  tags: ['Models'],
  scope: 'read',
  rateClass: 'poll',
  query: queueQuery,
  response: z.array(queueEntrySchema),
  errors: [400, 401, 429, 500],
  async handler({ res, query, services }) {
    const { workspaceId } = authOf(res);
    const [snap, weight] = await Promise.all([services.snapshot(), workspaceWeight(services.db, workspaceId)]);
    res.json({ data: queueEntries(services.config, snap, { workspaceId, weight }, query.model) });
  },
});

export const createQueueRouter = (deps: { config: Config; db: Database }, auth: Auth) =>
  queueEndpoints.router({ config: deps.config, db: deps.db, snapshot: queueSnapshots(deps.db) }, auth);
