// Every workflow the workers run; the bundler starts here.
// Every job kind's workflow: the default export runs under each kind's own workflow type.
export { default } from './kinds.js';
export { uploadFromUrl } from './upload-from-url.js';
export { progressQuery } from './job-generation.js';
export { webhookDelivery } from './webhook-delivery.js';
export { cancelProviderRequest } from './provider-cancel.js';
export { pipelineRun } from './pipeline-run.js';
export { batchRun } from './batch-run.js';
export { bulkActionRun } from './bulk-action-run.js';
