// What the fair-share test and benchmark measure: when each job's provider step started (from its
// workflow history, as operators read it in the Web UI), and many jobs created at once.
import type { Client } from '@temporalio/client';
import type { Database } from '../../db/index.js';
import { imageBody } from './job-helpers.js';
import { api } from './services.js';
import { waitFor, type Tenant } from './stack.js';

type EventTime = { seconds?: unknown; nanos?: number | null } | null | undefined;
const ms = (t: EventTime) => Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);

/**
 * The job's first provider step (submitAndCheck): when it was queued on the provider's task queue
 * (ActivityTaskScheduled) and when a provider slot took it (ActivityTaskStarted), epoch ms.
 */
export async function providerStepOf(client: Client, jobId: string): Promise<{ scheduled: number; started: number }> {
  const history = await client.workflow.getHandle(jobId).fetchHistory();
  const submits = new Map<string, number>();
  for (const e of history.events ?? []) {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'submitAndCheck') submits.set(String(e.eventId), ms(e.eventTime));
    const started = e.activityTaskStartedEventAttributes;
    const scheduled = started && submits.get(String(started.scheduledEventId));
    if (scheduled !== undefined && scheduled !== null) return { scheduled, started: ms(e.eventTime) };
  }
  throw new Error(`job ${jobId}: no provider step started in its history`);
}

/** The provider step of every job, read `concurrency` histories at a time. */
export async function providerSteps(client: Client, jobIds: readonly string[], concurrency = 20): Promise<Map<string, { scheduled: number; started: number }>> {
  const out = new Map<string, { scheduled: number; started: number }>();
  for (let i = 0; i < jobIds.length; i += concurrency) {
    const batch = jobIds.slice(i, i + concurrency);
    const steps = await Promise.all(batch.map((id) => providerStepOf(client, id)));
    batch.forEach((id, j) => out.set(id, steps[j]!));
  }
  return out;
}

/** When a provider slot took each job's first provider step, epoch ms. */
export async function providerStarts(client: Client, jobIds: readonly string[], concurrency = 20): Promise<Map<string, number>> {
  const steps = await providerSteps(client, jobIds, concurrency);
  return new Map([...steps].map(([id, s]) => [id, s.started]));
}

/** Creates `count` one-image jobs over HTTP, `concurrency` requests at a time: their ids, in creation order. */
export async function createImages(baseUrl: string, t: Tenant, count: number, marker: string, concurrency = 25): Promise<string[]> {
  const c = api(baseUrl, t.apiKey);
  const ids: string[] = [];
  for (let i = 0; i < count; i += concurrency) {
    const n = Math.min(concurrency, count - i);
    const created = await Promise.all(Array.from({ length: n }, (_, j) => c.post('/v1/images/generate', imageBody(t, `${marker} ${i + j}`))));
    for (const r of created) {
      if (r.status !== 200) throw new Error(`create failed: ${r.status} ${r.text}`);
      ids.push(r.body.data.id as string);
    }
  }
  return ids;
}

/** Waits until every one of the jobs has finished (completed or failed). */
export async function waitAllFinished(db: Database, jobIds: readonly string[], timeoutMs = 150_000): Promise<void> {
  await waitFor(
    `${jobIds.length} jobs to finish`,
    async () => {
      const { n } = await db
        .selectFrom('jobs')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('id', 'in', jobIds as string[])
        .where('status', 'in', ['completed', 'failed'])
        .executeTakeFirstOrThrow();
      return Number(n) === jobIds.length || undefined;
    },
    timeoutMs,
    250,
  );
}

/**
 * Where a job spent its time from its create to its end, epoch ms, read from its row and its
 * workflow history: the workflow's start, its first workflow task taken by a worker, its first
 * submit queued on the provider's task queue, the submit that took its route slot (the last
 * started: those before it only registered the job as waiting, or an attempt of it only waited),
 * how many submits it scheduled and that one's attempt, and its end.
 */
export interface JobTimeline {
  created: number;
  workflowStarted: number;
  firstTaskStarted: number;
  submitScheduled: number;
  submitStarted: number;
  submits: number;
  submitAttempt: number;
  /** The submit that took the slot answered (the local renderer rendered within it), and the workflow task after it was taken. */
  submitCompleted: number;
  nextTaskStarted: number;
  finished: number;
}

export async function jobTimeline(client: Client, db: Database, jobId: string): Promise<JobTimeline> {
  const row = await db.selectFrom('jobs').select(['created_at', 'finished_at']).where('id', '=', jobId).executeTakeFirstOrThrow();
  const history = await client.workflow.getHandle(jobId).fetchHistory();
  const t: Partial<JobTimeline> = { created: row.created_at.getTime(), finished: row.finished_at?.getTime() ?? NaN, submits: 0 };
  const submits = new Set<string>();
  for (const e of history.events ?? []) {
    if (e.workflowExecutionStartedEventAttributes) t.workflowStarted = ms(e.eventTime);
    if (e.workflowTaskStartedEventAttributes && t.firstTaskStarted === undefined) t.firstTaskStarted = ms(e.eventTime);
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'submitAndCheck') {
      submits.add(String(e.eventId));
      t.submits = t.submits! + 1;
      t.submitScheduled ??= ms(e.eventTime);
    }
    const started = e.activityTaskStartedEventAttributes;
    if (started && submits.has(String(started.scheduledEventId))) {
      t.submitStarted = ms(e.eventTime);
      t.submitAttempt = started.attempt ?? 1;
    }
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed && submits.has(String(completed.scheduledEventId))) {
      t.submitCompleted = ms(e.eventTime);
      t.nextTaskStarted = undefined;
    }
    if (e.workflowTaskStartedEventAttributes && t.submitCompleted !== undefined && t.nextTaskStarted === undefined) t.nextTaskStarted = ms(e.eventTime);
  }
  return t as JobTimeline;
}

/** A timeline as offsets from the job's create, for a log line. */
export function describeTimeline(t: JobTimeline): string {
  const at = (v: number) => `${((v - t.created) / 1000).toFixed(2)} s`;
  return (
    `workflow started ${at(t.workflowStarted)}, first task ${at(t.firstTaskStarted)}, submit queued ${at(t.submitScheduled)}, ` +
    `slot taken ${at(t.submitStarted)} (submit ${t.submits}, attempt ${t.submitAttempt}), done ${at(t.finished)}`
  );
}
