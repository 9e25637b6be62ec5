// A pipeline's webhook events (pipeline.completed, pipeline.failed, pipeline.step.completed,
// pipeline.step.failed), each recorded in the workspace's event log and written to the webhook outbox in the transaction of the move they report,
// so the signed delivery machinery (worker/webhook-dispatcher.ts, workflows/webhook-delivery.ts)
// sends them like any event. An event's id names its move (the pipeline's event counter, or the
// step's job), so a checkpoint retried after its commit writes nothing more.
import { sql } from 'kysely';
import type { Queryable } from '../index.js';
import type { Pipeline } from '../pipeline-schema.js';
import { getPipeline, stepsOf } from './pipelines.js';
import { WEBHOOK_DELIVERIES_CHANNEL } from './webhooks.js';
import { fanOutToEndpoints } from './webhook-endpoints.js';
import { appendWorkspaceEvent } from './workspace-events.js';
import type { PipelineWebhookEventName } from '../../shared/pipelines.js';

const DEFAULT_EVENTS: readonly PipelineWebhookEventName[] = ['pipeline.completed', 'pipeline.failed'];

export async function enqueuePipelineEvent(tx: Queryable, p: Pipeline, type: PipelineWebhookEventName, stepId?: string): Promise<void> {
  const { id, data, workspaceId } = await pipelineEvent(tx, p, type, stepId);
  // Every event goes to the workspace's log (0120_workspace_events), with or without a webhook.
  await appendWorkspaceEvent(tx, { id, workspaceId, type, subjectId: p.id, data });
  if (p.webhook_url !== null && (p.webhook_events ?? DEFAULT_EVENTS).includes(type)) {
    const r = await tx
      .insertInto('webhook_deliveries')
      .values({ id, job_id: null, workspace_id: workspaceId, type, url: p.webhook_url, job: JSON.stringify(data) })
      .onConflict((oc) => oc.doNothing())
      .returning('id')
      .executeTakeFirst();
    if (r) await sql`select pg_notify(${WEBHOOK_DELIVERIES_CHANNEL}, ${id})`.execute(tx);
  }
  // The workspace's endpoints subscribed to it get it too (0110_webhook_endpoints), with the same event id.
  await fanOutToEndpoints(tx, { workspaceId, type, eventId: id, jobId: null, data });
}

/** The event's id (its webhook-id) and data, from the pipeline as the transaction left it. */
async function pipelineEvent(tx: Queryable, p: Pipeline, type: PipelineWebhookEventName, stepId?: string) {
  const now = (await getPipeline(tx, p.id))!;
  const step = stepId === undefined ? undefined : (await stepsOf(tx, p.id)).find((s) => s.step_id === stepId);
  const data = {
    id: now.id,
    project_id: now.project_id,
    status: now.status,
    error: now.error,
    ...(step ? { step: { id: step.step_id, kind: step.kind, status: step.status, job_id: step.job_id, error: step.error } } : {}),
    metadata: now.metadata,
    tags: now.tags,
  };
  const id = step ? `whk_${now.id}_${type}_${step.job_id ?? step.attempt}` : `whk_${now.id}_${type}_${now.event_seq}`;
  return { id, data, workspaceId: now.workspace_id };
}
