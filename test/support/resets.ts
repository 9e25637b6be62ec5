// An operator's Reset as the Temporal Web UI does it: a run's reset points are the
// WorkflowTaskCompleted events of its history, and a reset to one re-runs that workflow task in a
// new run, live from there on.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { waitFor } from './stack.js';
import { localActivityOf } from './history.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The history's own event id values (protobuf Longs), by run and number. */
const eventIds = new Map<string, NonNullable<HistoryEvent['eventId']>>();

/** The closed run of a job's workflow, once Temporal says it closed as `status`. */
export async function closedRun(client: Client, id: string, status: string): Promise<string> {
  return waitFor(
    `${id}'s workflow to close as ${status}`,
    async () => {
      const d = await client.workflow.getHandle(id).describe();
      return d.status.name === status ? d.runId : undefined;
    },
    120_000,
    200,
  );
}

/** A run's history, with its reset points (WorkflowTaskCompleted event ids) remembered for reset(). */
export async function runHistory(client: Client, id: string, runId: string): Promise<{ events: HistoryEvent[]; points: number[] }> {
  const events = (await client.workflow.getHandle(id, runId).fetchHistory()).events ?? [];
  for (const e of events) if (e.eventId) eventIds.set(`${runId}/${Number(e.eventId)}`, e.eventId);
  return { events, points: events.filter((e) => e.workflowTaskCompletedEventAttributes).map((e) => Number(e.eventId)) };
}

/**
 * The reset point whose workflow task ran the `nth` (from 0) local activity of `type`: its marker
 * follows that task's WorkflowTaskCompleted, so a reset there runs that step live first.
 */
export function pointOfLocalActivity(h: { events: HistoryEvent[]; points: number[] }, type: string, nth = 0): number | undefined {
  const marker = h.events.filter((e) => localActivityOf(e) === type)[nth];
  if (!marker) return undefined;
  return h.points.filter((p) => p < Number(marker.eventId)).at(-1);
}

/** Resets the run to one of its points (read by runHistory first); returns the new run's id. */
export async function resetRun(client: Client, namespace: string, id: string, runId: string, point: number): Promise<string> {
  const eventId = eventIds.get(`${runId}/${point}`);
  assert.ok(eventId, `event ${point} of run ${runId} was read`);
  const r = await client.workflowService.resetWorkflowExecution({
    namespace,
    workflowExecution: { workflowId: id, runId },
    workflowTaskFinishEventId: eventId,
    requestId: randomUUID(),
    reason: `operator: reset to event ${point}`,
  });
  assert.ok(r.runId && r.runId !== runId, 'the reset started a new run');
  return r.runId;
}
