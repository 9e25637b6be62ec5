// The workspace's balance as GET /v1/balance states it, and its low-balance alerts: the period the
// figures cover (a UTC calendar month, as a monthly budget's), the bounds of the owner's thresholds
// and the body of a `balance.low` webhook event (written by the trigger of 0100_balance_alerts).
import { z } from 'zod';
import { periodEnd, periodStart } from './budgets.js';

/** The webhook event a charge sends when it takes the balance below an owner-set threshold. */
export const BALANCE_LOW_EVENT = 'balance.low';

/** At most this many thresholds per workspace (the table's check constraint says the same). */
export const MAX_BALANCE_THRESHOLDS = 10;
/** The largest threshold accepted: a balance is an int4 of credits. */
export const MAX_BALANCE_THRESHOLD = 1_000_000_000;

/** The balance period `now` falls in: the UTC calendar month, [start, end). */
export function balancePeriod(now: Date): { start: Date; end: Date } {
  const start = periodStart('month', now);
  return { start, end: periodEnd('month', start) };
}

export const balanceLowEventSchema = z.strictObject({
  type: z.literal(BALANCE_LOW_EVENT),
  data: z.strictObject({
    workspace_id: z.string().describe('the workspace whose balance went below the threshold'),
    threshold: z.number().int().describe('the owner-set threshold crossed, in credits'),
    available: z.number().int().describe('the available credits right after the charge that crossed it'),
    previous: z.number().int().describe('the available credits right before that charge (at or above the threshold)'),
    unit: z.literal('credits').describe('the unit of every amount: credits'),
    crossed_at: z.string().describe('when the charge was made (ISO 8601, UTC)'),
  }),
});
