// A job's timeline entries (GET /v1/{kind}/{id}/timeline; db/migrations/0029_receipts.ts writes
// them), declared once for the API schema, the clients and the docs.

/** What an entry says happened, in the order a job usually makes them. */
export const timelineEntryTypes = [
  'created',
  'charged',
  'started',
  'reused',
  'submitted',
  'provider_gave_up',
  'failover',
  'cancel_requested',
  'cancel_upstream',
  'failed',
  'refunded',
  'recharged',
  'outputs_stored',
  'completed',
  'outputs_deleted',
] as const;

/** The provider's answer to the cancel of a job's request there. */
export const cancelUpstreamOutcomes = ['confirmed', 'not_confirmed', 'not_cancellable'] as const;
export type CancelUpstreamOutcome = (typeof cancelUpstreamOutcomes)[number];
