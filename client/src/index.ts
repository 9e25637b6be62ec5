// @mediagen/client: a typed client for the Media Generation API (Node 20+ and browsers).
export * from './client.js';
export type { WebhookDeliveriesQuery, WebhookDelivery } from './webhook-deliveries.js';
export type { WebhookEndpoint, WebhookEndpointCreate, WebhookEndpointPing, WebhookEndpointUpdate, WebhookEndpointWithSecret } from './webhook-endpoints.js';
export type { FollowOptions, WorkspaceEvent, WorkspaceEventsQuery } from './workspace-events.js';
export type { PipelineEvent, PipelineWaitOptions } from './pipelines.js';
export type { BatchWaitOptions } from './batches.js';
export type { BulkActionWaitOptions } from './bulk-actions.js';
export { MediaGenError } from './errors.js';
export { createSseParser, type ServerSentEvent } from './sse.js';
export type { paths, operations, components } from './openapi.js';
