// Every workflow the workers run; the bundler starts here.
export { imageGeneration } from './image.js';
export { videoGeneration } from './video.js';
export { replaceActorGeneration } from './replace-actor.js';
export { talkingActorGeneration } from './talking-actor.js';
export { uploadFromUrl } from './upload-from-url.js';
export { progressQuery } from './pipeline.js';
export { webhookDelivery } from './webhook-delivery.js';
export { cancelProviderRequest } from './provider-cancel.js';
