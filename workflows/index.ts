// Every workflow the workers run; the bundler starts here.
// Each job kind's workflow (one per kind, named by its descriptor's workflowType).
export * from './kinds.js';
export { uploadFromUrl } from './upload-from-url.js';
export { progressQuery } from './job-generation.js';
export { webhookDelivery } from './webhook-delivery.js';
export { cancelProviderRequest } from './provider-cancel.js';
export { pipelineRun } from './pipeline-run.js';
export { batchRun } from './batch-run.js';
export { bulkActionRun } from './bulk-action-run.js';
