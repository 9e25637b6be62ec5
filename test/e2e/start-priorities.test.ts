// The workflows the gateway starts besides jobs wait with the workspace's fair share, as jobs do:
// a pipeline's parent and an upload-from-url start with a Temporal Priority whose fairness key is
// the workspace and whose weight is its share (normal priority level). Real gateway, Postgres and
// Temporal; no worker polls the suite's queues, so each start is read back as the server keeps it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, type Connection } from '@temporalio/client';
import { connectClient } from '../../shared/temporal-connection.js';
import { createTenant, createTestDatabase, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import { api, startGateway, type InProcessGateway as Gateway } from '../support/services.js';
import { setFairShareWeight } from '../../db/repos/fair-share.js';
import { imageStep } from '../support/pipeline-steps.js';
import { randomToken } from '../../shared/ids.js';
import { priorityKeys } from '../../shared/task-priority.js';
import type { Config } from '../../shared/config.js';

let tdb: TestDatabase;
let config: Config;
let gw: Gateway;
let connection: Connection;
let temporal: Client;

before(async () => {
  tdb = await createTestDatabase();
  config = testConfig(tdb.url, {
    TASK_QUEUE_PREFIX: `sp-${randomToken(8).toLowerCase()}`,
    UPLOAD_FROM_URL_TIMEOUT_MS: '2000',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
  });
  gw = await startGateway(config, tdb.db);
  connection = await connectClient(config);
  temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
});

after(async () => {
  await connection?.close();
  await gw?.close();
  await tdb?.drop();
});

const priorityOf = async (workflowId: string) => (await temporal.workflow.getHandle(workflowId).describe()).raw.workflowExecutionInfo?.priority;

test("a pipeline's parent workflow starts with the workspace as its fairness key, weighted by its share", async () => {
  const t = await createTenant(tdb.db, 1000);
  await setFairShareWeight(tdb.db, t.workspaceId, 4);
  const r = await api(gw.baseUrl, t.apiKey).post('/v1/pipelines', { project_id: t.projectId, steps: [imageStep()] });
  assert.equal(r.status, 200, r.text);
  const priority = await priorityOf(r.body.data.id);
  assert.equal(priority?.fairnessKey, t.workspaceId);
  assert.equal(priority?.fairnessWeight, 4);
  assert.equal(priority?.priorityKey, priorityKeys.normal);
  await temporal.workflow.getHandle(r.body.data.id).terminate('test over');
});

test('an upload-from-url workflow starts with the workspace as its fairness key, weighted by its share', async () => {
  const t = await createTenant(tdb.db, 1000);
  await setFairShareWeight(tdb.db, t.workspaceId, 2.5);
  // No fetch worker: the gateway stops waiting after UPLOAD_FROM_URL_TIMEOUT_MS (503) and ends the workflow.
  const r = await api(gw.baseUrl, t.apiKey).post('/v1/upload-from-url', { project_id: t.projectId, url: 'https://example.com/still.png' });
  assert.equal(r.status, 503, r.text);
  const started = await waitFor(
    'the upload-from-url workflow to be listed',
    async () => {
      for await (const w of temporal.workflow.list({ query: `WorkflowType = 'uploadFromUrl' AND TaskQueue = '${config.TASK_QUEUE_PREFIX}-workflows'` }))
        return w.workflowId;
      return undefined;
    },
    30_000,
    250,
  );
  const priority = await priorityOf(started);
  assert.equal(priority?.fairnessKey, t.workspaceId);
  assert.equal(priority?.fairnessWeight, 2.5);
});
