// A pipeline's webhook events (pipeline.completed, pipeline.failed, pipeline.step.completed,
// pipeline.step.failed), written to the webhook outbox in the transaction of the move they report,
// so the signed delivery machinery (worker/webhook-dispatcher.ts, workflows/webhook-delivery.ts)
// sends them like any event. An event's id names its move (the pipeline's event counter, or the
// step's job), so a checkpoint retried after its commit writes nothing more.
import { sql } from 'kysely';
import type { Queryable } from '../index.js';
import type { Pipeline } from '../pipeline-schema.js';
import { getPipeline, stepsOf } from './pipelines.js';
import { WEBHOOK_DELIVERIES_CHANNEL } from './webhooks.js';
import { fanOutToEndpoints, hasSubscriber } from './webhook-endpoints.js';
import type { PipelineWebhookEventName } from '../../shared/pipelines.js';

const DEFAULT_EVENTS: readonly PipelineWebhookEventName[] = ['pipeline.completed', 'pipeline.failed'];

export async function enqueuePipelineEvent(tx: Queryable, p: Pipeline, type: PipelineWebhookEventName, stepId?: string): Promise<void> {
  const perRequest = p.webhook_url !== null && (p.webhook_events ?? DEFAULT_EVENTS).includes(type);
  // The workspace's endpoints subscribed to it get it too (0110_webhook_endpoints), with the same event id.
  if (!perRequest && !(await hasSubscriber(tx, p.workspace_id, type))) return;
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
  if (perRequest) {
    const r = await tx
      .insertInto('webhook_deliveries')
      .values({ id, job_id: null, workspace_id: now.workspace_id, type, url: p.webhook_url!, job: JSON.stringify(data) })
      .onConflict((oc) => oc.doNothing())
      .returning('id')
      .executeTakeFirst();
    if (r) await sql`select pg_notify(${WEBHOOK_DELIVERIES_CHANNEL}, ${id})`.execute(tx);
  }
  await fanOutToEndpoints(tx, { workspaceId: now.workspace_id, type, eventId: id, jobId: null, data });
}
