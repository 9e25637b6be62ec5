// The saved workflow histories (test/workflows/histories/<name>.json), recorded on the real stack by
// scripts/histories/save-histories.ts and replayed by replay.test.ts: one of every path a deploy can find in
// flight. The replay test requires each of them.
/** The saved histories, by file name (without .json): what each one is a history of. */
export const savedHistories = {
  image: 'an image job (local renderer): completed within its submit',
  video: 'a video job from an uploaded start frame: completed',
  replace_actor: 'a replace-actor job from uploaded files: completed',
  talking_actor: 'a talking-actor job: completed',
  'replace_actor-url-inputs': 'a replace-actor job from image_url and video_url: inputs fetched on the fetch queue, completed',
  'image-failed': 'an image job the renderer refused ([fail:terminal]): failed and refunded',
  'image-canceled-after-completion':
    'an image job canceled after its outputs were stored, while its completion step ran: that step canceled, the job failed and refunded, the run canceled',
  'image-canceled': 'an image job canceled while the provider works: failed (canceled), refunded, provider request canceled',
  'image-deadline-exceeded': "an image job polled on timers past the model's deadline: failed, refunded, provider request canceled",
  'image-deadline-completed': "an image job with a customer's deadline (deadline_seconds) completed before it: the deadline's timer canceled",
  'image-deadline-passed-while-running':
    "an image job whose customer's deadline passed while the renderer worked: its steps canceled by the deadline's timer, failed (deadline_exceeded), refunded, provider request canceled",
  'image-deadline-passed-before-start':
    "an image job whose customer's deadline had passed when its workflow started: failed (deadline_exceeded) before any provider step, refunded",
  'image-db-step-backoff': 'an image job whose first Postgres step met an outage: the local activity retried on a timer, then completed',
  'fal-image': 'an image job at a paid provider (fal): submitted once, polled on timers, outputs fetched from its CDN, completed',
  'fal-image-failed-after-submit': 'a fal image job the provider failed after its request was recorded: failed, refunded, provider cancel',
  'fal-image-reset': 'the reset run of that failed fal job, reset to the workflow task after its submit: revived (re-charged), resubmitted, completed',
  'fal-talking-actor':
    "a talking-actor job on its live route: the script spoken on ElevenLabs' queue (the speech step), then the lipsync submitted to fal with that speech, completed",
  'grok-video-failed-after-failover': 'a grok-video job that gave fal up (status 5xx past the budget) and was refused by xAI for moderation: failed, refunded',
  'grok-video-reset-after-give-up':
    'the reset run of that job, reset to the workflow task that gave fal up: the route step claims (re-charges) the job, xAI serves it, completed',
  'grok-video-failover':
    "a grok-video job whose first route (fal) failed after its submit: given up past the failover budget, that request's cancel handed to its own workflow, completed on the second route (xAI)",
  'provider-cancel-given-up': 'a cancelProviderRequest workflow started by that job for its given-up fal request (the reference given): canceled at fal',
  'grok-video-every-route-failed':
    'a grok-video job whose every route (fal, then xAI) stayed unreachable past the failover budget: failed, refunded, naming both attempts',
  'grok-video-breaker-skip': "a grok-video job created while fal's circuit breaker was open: fal skipped at the start, completed on xAI",
  'grok-video-canceled-during-failover':
    'a grok-video job canceled by its customer on xAI after fal was given up: failed (canceled), refunded, the xAI request canceled',
  'image-reset-insufficient-credits':
    'the reset run (to its first workflow task) of a failed image job whose workspace can no longer pay: the revival refused, the job stays failed',
  'webhook-delivery': 'a webhookDelivery workflow: the first POST answered 503, the retry delivered',
  'webhook-abandon': 'a webhookDelivery workflow whose every POST was answered 503 until its retries ran out: the event given up (abandonWebhook)',
  'upload-from-url': 'an uploadFromUrl workflow: a loopback HTTPS image fetched and stored',
  'provider-cancel': "a cancelProviderRequest workflow: a terminated job's provider request canceled after the reconciler refunded it",
  'pipeline-completed':
    'a customer pipeline (pipelineRun) of two steps, an image then a video from it: each step a child job workflow started and checkpointed, completed',
  'pipeline-step-failed':
    'a customer pipeline whose second step the renderer refused ([fail:terminal]): step 1 completed, step 2 checkpointed as failed, the pipeline ended there',
  'image-encrypted':
    "an image job recorded with the payload codec on (the test profile's key): every payload sealed, replayed through the codec's data converter",
} as const;

export type HistoryName = keyof typeof savedHistories;
