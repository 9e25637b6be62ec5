// Wakes a job waiting for a route slot once a release granted it one: a signal without payload to
// its workflow (workflow id = job id), sent over the worker's own connection, so a process without
// a Temporal client (a provider fleet) can send it. Bounded in time; a failure is the caller's to log.
import { randomUUID } from 'node:crypto';
import type { NativeConnection } from '@temporalio/worker';
import { reuseSourceEndedSignalName, routeSlotGrantedSignalName } from '../workflows/definitions.js';

const WAKE_TIMEOUT_MS = 5_000;

/** A payload-less signal `signalName` to a job's workflow, bounded in time. */
function jobWaker(connection: NativeConnection, namespace: string, signalName: string, identity: string): (jobId: string) => Promise<void> {
  return async (jobId) => {
    await connection.withDeadline(Date.now() + WAKE_TIMEOUT_MS, () =>
      connection.workflowService.signalWorkflowExecution({
        namespace,
        workflowExecution: { workflowId: jobId },
        signalName,
        identity,
        requestId: randomUUID(),
      }),
    );
  };
}

export function slotGrantWaker(connection: NativeConnection, namespace: string): (jobId: string) => Promise<void> {
  return jobWaker(connection, namespace, routeSlotGrantedSignalName, 'route-slot-grants');
}

/** Wakes a reuse follower: the identical job it waits for ended (activities/jobs/reuse.ts). */
export function reuseFollowerWaker(connection: NativeConnection, namespace: string): (jobId: string) => Promise<void> {
  return jobWaker(connection, namespace, reuseSourceEndedSignalName, 'reuse-sources');
}
