// Reading a workflow history as operators do in the Web UI: the local activities of a run appear
// there as markers whose payloads name the activity type.
import type { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The activity type a local-activity marker records, or undefined for any other event. */
export function localActivityOf(e: HistoryEvent): string | undefined {
  const details = e.markerRecordedEventAttributes?.details;
  if (!details) return undefined;
  for (const entry of Object.values(details)) {
    for (const p of entry.payloads ?? []) {
      const text = p.data ? Buffer.from(p.data).toString('utf8') : '';
      const m = /"activity_type":"(\w+)"/.exec(text);
      if (m) return m[1];
    }
  }
  return undefined;
}

/** The index in `events` of the first local activity of `type`, or -1. */
export function indexOfLocalActivity(events: HistoryEvent[], type: string): number {
  return events.findIndex((e) => localActivityOf(e) === type);
}
