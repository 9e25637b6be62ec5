// What the visibility store says of job and pipeline runs: closed runs the reconciler settles, the
// pipeline parents an operator ended, and which jobs have a run at all (the reconciler's reads).
import type { Client } from '@temporalio/client';
import { inFlightStatuses } from '../jobs/transitions.js';
import { searchAttributes, taskQueues } from './definitions.js';
import { pipelineWorkflowType } from './pipeline-types.js';

/** A job workflow run that closed without settling its job, as the visibility store lists it. */
export interface ClosedRun {
  jobId: string;
  runId: string;
  /** As Temporal names it: TERMINATED, TIMED_OUT, CANCELLED or FAILED. */
  status: string;
  closedAt: Date;
}

const executionStatusNames: Record<number, string> = { 3: 'FAILED', 4: 'CANCELLED', 5: 'TERMINATED', 7: 'TIMED_OUT' };

const quoted = (s: string) => `'${s.replace(/'/g, "''")}'`;

function timestampToDate(t: { seconds?: unknown; nanos?: number | null } | null | undefined): Date {
  return new Date(Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6));
}

/**
 * Every run of this deployment's job workflows that closed after `closedAfter` while its
 * `JobStatus` search attribute still says pending or generating: the pipeline sets `completed` or
 * `failed` in the very workflow task that ends a run, so only a run closed without its code
 * (terminated, timed out) keeps an in-flight status. One visibility call per page of `pageSize`:
 * the cost follows the runs found, never the jobs in flight. Returns the runs and the calls made.
 */
export async function listClosedInFlightRuns(
  client: Client,
  opts: { taskQueuePrefix: string; closedAfter: Date; pageSize?: number },
): Promise<{ runs: ClosedRun[]; calls: number }> {
  const query = [
    `TaskQueue = ${quoted(taskQueues(opts.taskQueuePrefix).workflows)}`,
    `ExecutionStatus IN ('Terminated', 'TimedOut', 'Canceled', 'Failed')`,
    `${searchAttributes.jobStatus.name} IN (${inFlightStatuses.map(quoted).join(', ')})`,
    `CloseTime > ${quoted(opts.closedAfter.toISOString())}`,
  ].join(' AND ');
  return listRuns(client, query, opts.pageSize ?? 1000);
}

/**
 * Every run of this deployment's pipeline parents that closed after `closedAfter` as terminated or
 * canceled: the runs an operator may have ended (or the stalled-pipeline restarter terminated). One
 * visibility call per page of `pageSize`.
 */
export async function listEndedPipelineRuns(
  client: Client,
  opts: { taskQueuePrefix: string; closedAfter: Date; pageSize?: number },
): Promise<{ runs: ClosedRun[]; calls: number }> {
  const query = [
    `WorkflowType = ${quoted(pipelineWorkflowType)}`,
    `TaskQueue = ${quoted(taskQueues(opts.taskQueuePrefix).workflows)}`,
    `ExecutionStatus IN ('Terminated', 'Canceled')`,
    `CloseTime > ${quoted(opts.closedAfter.toISOString())}`,
  ].join(' AND ');
  return listRuns(client, query, opts.pageSize ?? 1000);
}

/** The reason a terminated run was given (its last history event; one call), or null when it was not terminated. */
export async function terminateReasonOf(client: Client, workflowId: string, runId: string): Promise<string | null> {
  const r = await client.workflowService.getWorkflowExecutionHistoryReverse({
    namespace: client.options.namespace,
    execution: { workflowId, runId },
    maximumPageSize: 1,
  });
  return r.history?.events?.[0]?.workflowExecutionTerminatedEventAttributes?.reason ?? null;
}

/**
 * Which of `jobIds` have a workflow run in this namespace, and which of those runs is still running
 * (one visibility call per 100 ids). For the reconciler: a job whose workflow exists needs no start,
 * and a job with a running run (an operator's reset) is that run's to settle.
 */
export async function listJobRuns(client: Client, jobIds: string[], opts: { runningOnly?: boolean } = {}): Promise<{ ids: Set<string>; calls: number }> {
  const ids = new Set<string>();
  let calls = 0;
  for (let i = 0; i < jobIds.length; i += 100) {
    const chunk = jobIds.slice(i, i + 100);
    const query = `WorkflowId IN (${chunk.map(quoted).join(', ')})${opts.runningOnly ? ` AND ExecutionStatus = 'Running'` : ''}`;
    const r = await listRuns(client, query, 1000);
    calls += r.calls;
    for (const run of r.runs) ids.add(run.jobId);
  }
  return { ids, calls };
}

async function listRuns(client: Client, query: string, pageSize: number): Promise<{ runs: ClosedRun[]; calls: number }> {
  const runs: ClosedRun[] = [];
  let calls = 0;
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.listWorkflowExecutions({ namespace: client.options.namespace, query, pageSize, nextPageToken });
    calls++;
    for (const e of page.executions ?? []) {
      runs.push({
        jobId: e.execution?.workflowId ?? '',
        runId: e.execution?.runId ?? '',
        status: executionStatusNames[e.status ?? 0] ?? String(e.status),
        closedAt: timestampToDate(e.closeTime),
      });
    }
    nextPageToken = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return { runs, calls };
}
