// `mediagen balance`: the workspace's credits (GET /v1/balance); with --alerts, first replaces the
// owner's low-balance thresholds (PUT /v1/balance/alerts, owner keys only).
import type { Command } from 'commander';
import type { MediaGenClient } from './client.js';
import { print, usageError, type GlobalOpts } from './cli-support.js';

/** `--alerts 100,20` → [100, 20]; `--alerts none` → []. */
function parseThresholds(text: string): number[] {
  if (text.trim() === 'none') return [];
  const parts = text.split(',').map((s) => s.trim());
  if (parts.some((p) => !/^\d+$/.test(p))) usageError(`--alerts takes whole numbers of credits separated by commas, or none; got "${text}"`);
  return parts.map(Number);
}

export function addBalanceCommand(program: Command, client: () => MediaGenClient, globals: () => GlobalOpts): void {
  program
    .command('balance')
    .description('the workspace credits: available, held by jobs in flight, granted and spent this month, and the low-balance thresholds')
    .option('--alerts <credits>', 'first set the low-balance thresholds (owner keys only): e.g. 100,20, or none to turn them off')
    .option('--alert-url <url>', 'where the balance.low events go (https; needed with thresholds)')
    .action(async (o: { alerts?: string; alertUrl?: string }) => {
      const c = client();
      if (o.alertUrl !== undefined && o.alerts === undefined) usageError('--alert-url needs --alerts');
      if (o.alerts !== undefined) {
        const thresholds = parseThresholds(o.alerts);
        await c.balance.setAlerts(thresholds.length ? { thresholds, url: o.alertUrl ?? '' } : { thresholds: [] });
      }
      const r = await c.balance.get();
      const b = r.data;
      print(globals(), r, () =>
        [
          `available   ${b.available} ${b.unit}`,
          `held        ${b.held} (charged to jobs in flight; refunded if they fail)`,
          `this period ${b.period.start.slice(0, 10)} to ${b.period.end.slice(0, 10)}: granted ${b.granted_this_period}, spent ${b.spent_this_period} (net of ${b.refunded_this_period} refunded), deducted ${b.deducted_this_period}`,
          `alerts      ${b.thresholds.length ? `below ${b.thresholds.join(', ')}` : 'none'}`,
        ].join('\n'),
      );
    });
}
