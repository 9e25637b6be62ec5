// What a workflow history holds and the Temporal Cloud actions it made (docs.temporal.io/cloud/actions):
// shared by the capacity benchmarks (scripts/bench/capacity.ts, scripts/bench/capacity-cluster.ts).
import type { temporal } from '@temporalio/proto';

/** What a job's history holds, and the Temporal Cloud actions it made (docs.temporal.io/cloud/actions). */
export interface HistoryCounts {
  events: number;
  workflowTasks: number;
  activities: number;
  activityAttempts: number;
  localActivities: number;
  localActivityTasks: number;
  timers: number;
  signals: number;
  children: number;
  upserts: number;
  actions: number;
}

export function countHistory(events: temporal.api.history.v1.IHistoryEvent[]): HistoryCounts {
  const n = (has: (e: temporal.api.history.v1.IHistoryEvent) => unknown) => events.filter(has).length;
  const markers = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
  const started = events.flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt ?? 1] : []));
  const c = {
    events: events.length,
    workflowTasks: n((e) => e.workflowTaskCompletedEventAttributes),
    activities: n((e) => e.activityTaskScheduledEventAttributes),
    // An attempt that failed and was retried by the server leaves only its last start in the history.
    activityAttempts: started.reduce((s, a) => s + a, 0),
    localActivities: markers.length,
    // Temporal Cloud bills the local activities of one workflow task as one action.
    localActivityTasks: new Set(markers.map((e) => String(e.markerRecordedEventAttributes!.workflowTaskCompletedEventId))).size,
    timers: n((e) => e.timerStartedEventAttributes),
    signals: n((e) => e.workflowExecutionSignaledEventAttributes) + n((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes),
    children: n((e) => e.startChildWorkflowExecutionInitiatedEventAttributes),
    upserts: n((e) => e.upsertWorkflowSearchAttributesEventAttributes),
  };
  // Workflow started (1), every activity start or retry, one per workflow task with local
  // activities, timers, signals, child workflow starts, search-attribute upserts. Heartbeats that
  // reach the server and queries count too but leave no event (see the printout).
  const actions = 1 + c.activityAttempts + c.localActivityTasks + c.timers + c.signals + c.children + c.upserts;
  return { ...c, actions };
}
