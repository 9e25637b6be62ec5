// `mediagen usage`: the workspace's credits and job counts per day or hour over a range, every page
// of it: a table with the totals, the whole report as JSON (--json), or CSV (--csv).
import { Option, type Command } from 'commander';
import type { MediaGenClient, UsageQuery, UsageRow } from './client.js';
import { print, table, type GlobalOpts } from './cli-support.js';

const dimensions = ['key', 'project', 'model', 'kind'] as const;
const column = { key: 'key_id', project: 'project_id', model: 'model', kind: 'kind' } as const;

export function addUsageCommand(program: Command, client: () => MediaGenClient, globals: () => GlobalOpts): void {
  program
    .command('usage')
    .description('credits spent, refunded and net, and job counts, per UTC day or hour (default: this month)')
    .option('--from <date>', 'start, inclusive: 2026-11-01 or 2026-11-01T12:00:00Z (default: the start of the month)')
    .option('--to <date>', 'end, exclusive (default: the start of the next month)')
    .addOption(new Option('--granularity <unit>', 'bucket size').choices(['day', 'hour']))
    .option('--group-by <dims>', `also group by, comma-separated: ${dimensions.join(', ')}`)
    .option('--csv', 'print CSV (RFC 4180, with a header row)')
    .action(async (o) => {
      const q: UsageQuery = { from: o.from, to: o.to, granularity: o.granularity, group_by: o.groupBy };
      const c = client();
      if (o.csv) {
        process.stdout.write(await c.usage.csv(q));
        return;
      }
      const first = await c.usage.get({ ...q, limit: 100 });
      const rows: UsageRow[] = [...first.data];
      for (let cursor = first.next_cursor; cursor;) {
        const page = await c.usage.get({ ...q, limit: 100, cursor });
        rows.push(...page.data);
        cursor = page.next_cursor;
      }
      const report = { data: rows, totals: first.totals, period: first.period };
      const groups = (o.groupBy ? String(o.groupBy).split(',') : []).map((d) => column[d as (typeof dimensions)[number]]).filter(Boolean);
      const flat = rows.map((r) => ({
        ...r,
        spent: r.credits.spent,
        refunded: r.credits.refunded,
        net: r.credits.net,
        jobs: r.jobs.created,
        failed: r.jobs.failed,
      }));
      const t = first.totals;
      print(
        globals(),
        report,
        () =>
          `${first.period.from} to ${first.period.to}, by ${first.period.granularity}\n` +
          table(flat as Record<string, unknown>[], ['period_start', ...groups, 'spent', 'refunded', 'net', 'jobs', 'failed']) +
          `\ntotal: ${t.credits.spent} spent, ${t.credits.refunded} refunded, ${t.credits.net} net; ${t.jobs.created} jobs (${t.jobs.completed} completed, ${t.jobs.failed} failed)`,
      );
    });
}
