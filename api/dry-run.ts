// `?dry_run=true` on the generate endpoints: the create's full validation, its project (403) and
// reference (404) checks and its price, answered as `{ data: { price, available, sufficient,
// non_refundable_after_submit, deadline_at, within_budget, budget_remaining } }`.
// Nothing is charged, stored or started: the checks run in a read-only transaction. The request
// has passed the generation rate class before it gets here, so a dry run counts like a create.
import type { RequestHandler } from 'express';
import { z } from 'zod';
import type { Database, Tx } from '../db/index.js';
import { authOf } from './auth.js';
import { parseOr400 } from './validate.js';

export const dryRunQuery = z.object({
  dry_run: z
    .enum(['true', 'false'])
    .optional()
    .describe('true: validate the request and answer its price ({ price, available, sufficient }) without creating, charging or starting anything'),
});

export const dryRunResultSchema = z.object({
  price: z.number().int().describe('credits this request would be charged'),
  available: z.number().int().describe("the workspace's credit balance now"),
  sufficient: z.boolean().describe('whether the balance covers the price (else the create would answer 402)'),
  within_budget: z
    .boolean()
    .nullable()
    .describe(
      'whether the budgets of the key and the project (GET /v1/budgets) admit the price now (else the create would answer 402 budget_exceeded); null when no budget applies',
    ),
  budget_remaining: z.number().int().nullable().describe('the least credits any applying budget has left in its period; null when no budget applies'),
  non_refundable_after_submit: z
    .number()
    .int()
    .describe(
      "credits a cancel does not refund once the job was submitted to its provider (the provider's cost; refunded too when that provider confirms the cancel of a request it had not run); a cancel before the submit refunds the whole price. 0 when the local renderer serves the model",
    ),
  deadline_at: z
    .number()
    .int()
    .nullable()
    .describe(
      "when the job would be canceled (ms since the Unix epoch) if created now: now plus its deadline_seconds; its deadline's cancel refunds like a cancel does (non_refundable_after_submit kept once it was submitted). null: no deadline",
    ),
  reuse: z
    .object({
      source_job_id: z.string().describe('the identical job the create would follow'),
      source_status: z
        .enum(['completed', 'in_flight'])
        .describe('completed: the create would be answered from its outputs at once; in_flight: it would wait for it (and run itself should it fail)'),
      price: z
        .number()
        .int()
        .describe('what the job would cost once answered from it (the reuse price); the create charges `price` and refunds the difference then'),
    })
    .nullable()
    .optional()
    .describe(
      'for a create that reuses (reuse: true, or the workspace setting): the identical job it would be answered from, or null when it would generate; absent when it does not reuse',
    ),
});
type DryRunResult = z.infer<typeof dryRunResultSchema>;

/**
 * Middleware before a create's handler (after the body parser): answers a dry run with `quote`,
 * which validates the request and answers its quote against the balance inside the given
 * transaction (the job service's quote; throwing the create's 4xx), and passes every other
 * request on.
 */
export function dryRun(db: Database, quote: (body: unknown, tx: Tx, workspaceId: string, apiKeyId: string) => Promise<DryRunResult>): RequestHandler {
  return (req, res, next) => {
    if (!req.url.includes('?') || parseOr400(dryRunQuery, req.query).dry_run !== 'true') return next();
    const { workspaceId, apiKeyId } = authOf(res);
    db.transaction()
      .setAccessMode('read only')
      .execute((tx) => quote(req.body, tx, workspaceId, apiKeyId))
      .then((data) => res.status(200).json({ data }), next);
  };
}
