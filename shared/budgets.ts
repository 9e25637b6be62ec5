// Budget periods and thresholds: pure arithmetic shared by the gateway, the admin CLI and the
// clients' documentation. A period is a UTC day or a UTC calendar month; it starts at 00:00:00.000
// UTC of its first day and resets at the start of the next one.
import { z } from 'zod';

export const budgetPeriods = ['day', 'month'] as const;
export type BudgetPeriod = (typeof budgetPeriods)[number];
const budgetScopes = ['key', 'project'] as const;
export type BudgetScope = (typeof budgetScopes)[number];

/** The thresholds a budget alerts at when none are given (percent of the limit). */
export const defaultAlertAt: readonly number[] = [80, 100];

/** The start of the period `now` falls in (UTC). */
export function periodStart(period: BudgetPeriod, now: Date): Date {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  return period === 'day' ? new Date(Date.UTC(y, m, now.getUTCDate())) : new Date(Date.UTC(y, m, 1));
}

/** When the period starting at `start` ends: the next period's start, when the budget admits again. */
export function periodEnd(period: BudgetPeriod, start: Date): Date {
  const y = start.getUTCFullYear();
  const m = start.getUTCMonth();
  return period === 'day' ? new Date(Date.UTC(y, m, start.getUTCDate() + 1)) : new Date(Date.UTC(y, m + 1, 1));
}

/**
 * The thresholds newly reached when a period's spend goes to `spent`, given the highest already
 * alerted (`alertedPct`): each threshold fires once per period, in increasing order.
 */
export function thresholdsReached(alertAt: readonly number[], limit: number, spent: number, alertedPct: number): number[] {
  return [...new Set(alertAt)].filter((t) => t > alertedPct && spent * 100 >= t * limit).sort((a, b) => a - b);
}

/** `--alert-at 80,100`: percentages 1–1000, at most 10 of them. Throws a message on bad input. */
export function parseAlertAt(text: string): number[] {
  const parts = text.split(',').map((s) => s.trim());
  if (parts.length === 0 || parts.length > 10 || parts.some((p) => !/^\d+$/.test(p))) {
    throw new Error(`alert thresholds must be a comma-separated list of 1 to 10 whole percentages, got "${text}"`);
  }
  const values = parts.map(Number);
  if (values.some((v) => v < 1 || v > 1000)) throw new Error(`alert thresholds must be between 1 and 1000 percent, got "${text}"`);
  return [...new Set(values)].sort((a, b) => a - b);
}

/**
 * The body of a `budget.threshold_reached` webhook event: which budget, the threshold reached and
 * the spend at that moment. The outbox writer builds it (db/repos/budgets.ts) and the OpenAPI
 * document's `webhooks` lists it (api/webhooks.ts).
 */
export const budgetThresholdEventSchema = z.strictObject({
  type: z.literal('budget.threshold_reached'),
  data: z.strictObject({
    budget: z.strictObject({
      id: z.string().describe('budget id (bud_...)'),
      scope: z.enum(budgetScopes).describe('what the budget limits: one API key or one project'),
      scope_id: z.string().describe('the API key id (key_...) or the project id'),
      period: z.enum(budgetPeriods).describe('a UTC day or a UTC calendar month'),
      limit: z.number().int().describe('credits the scope may spend per period'),
    }),
    threshold: z.number().int().describe('the threshold reached, in percent of the limit'),
    spent: z.number().int().describe('net credits spent in the period when the threshold was reached'),
    limit: z.number().int().describe('the limit, as in budget.limit'),
    period: z.strictObject({
      start: z.string().describe('when the period started (ISO 8601, UTC)'),
      resets_at: z.string().describe('when the period ends and the budget admits again (ISO 8601, UTC)'),
    }),
  }),
});
export type BudgetThresholdEvent = z.infer<typeof budgetThresholdEventSchema>;
