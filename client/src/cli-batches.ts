// `mediagen batches create FILE.json [--wait] [--dry-run]`, `get ID`, `list`, `wait ID`, `cancel ID`,
// `retry ID` and `manifest ID [--format json|jsonl|csv]` (docs/api/batches.md). A file argument may
// be `-` (standard input). With --wait the counts go to stderr as they move and the final record to
// stdout.
import type { Command } from 'commander';
import type { Batch, BatchCreate, MediaGenClient } from './client.js';
import { MediaGenError } from './errors.js';
import { print, table, usageError, type GlobalOpts } from './cli-support.js';
import { readJson } from './cli-pipelines.js';

const countsText = (b: Batch) =>
  Object.entries(b.counts)
    .filter(([, n]) => n > 0)
    .map(([s, n]) => `${s} ${n}`)
    .join(', ');

/** The batch in words: its status, items by status, price and what it cost. */
export function describeBatch(b: Batch): string {
  return `${b.id}  ${b.status} · ${b.item_count} items (${countsText(b)}) · price ${b.price} · charged ${b.charged}`;
}

/** Follows the batch to its end, its counts on stderr as they move; prints the final record. */
async function follow(c: MediaGenClient, id: string, opts: GlobalOpts): Promise<void> {
  const abort = new AbortController();
  const onSigint = () =>
    abort.abort(new MediaGenError({ status: 0, code: 'interrupted', message: `stopped waiting (the batch ${id} goes on; mediagen batches wait ${id})` }));
  process.once('SIGINT', onSigint);
  try {
    const b = await c.batches.wait(id, { signal: abort.signal, onUpdate: (now) => process.stderr.write(`${now.id}  ${now.status} · ${countsText(now)}\n`) });
    print(opts, b, () => describeBatch(b));
  } finally {
    process.off('SIGINT', onSigint);
  }
}

export function addBatchCommands(program: Command, client: () => MediaGenClient, globals: () => GlobalOpts): void {
  const batches = program.command('batches').description('many generations submitted as one, at priority low (docs/api/batches.md)');
  batches
    .command('create')
    .description('create a batch from a JSON create body ({"project_id", "items": [{"custom_id", "kind", "body"}, ...]}) and print it')
    .argument('<file>', 'the create body: a JSON file, or - for standard input')
    .option('--wait', 'follow it to its end: the counts on stderr, the final record on stdout')
    .option('--dry-run', "validate it and print the quote (each item's price) instead, creating and charging nothing")
    .action(async (file: string, o: { wait?: boolean; dryRun?: boolean }) => {
      if (o.wait && o.dryRun) usageError('--wait and --dry-run do not go together');
      const body = (await readJson(file, 'a batch create body')) as BatchCreate;
      const c = client();
      if (o.dryRun) {
        const quote = (await c.batches.create(body, { dryRun: true })).data as {
          price: number;
          items: { custom_id: string; price: number }[];
          available: number;
          sufficient: boolean;
        };
        print(
          globals(),
          quote,
          () =>
            `price ${quote.price} (available ${quote.available}${quote.sufficient ? '' : ', NOT sufficient'})\n` + table(quote.items, ['custom_id', 'price']),
        );
        return;
      }
      const b = (await c.batches.create(body)).data as Batch;
      if (!o.wait) return print(globals(), b, () => `${describeBatch(b)}\n  follow it: mediagen batches wait ${b.id}`);
      process.stderr.write(`${b.id}  created\n`);
      await follow(c, b.id, globals());
    });
  batches
    .command('get')
    .description('show a batch: its status and its items counted by status')
    .argument('<id>', 'batch id (bat_…)')
    .action(async (id: string) => {
      const b = (await client().batches.get(id)).data;
      print(globals(), b, () => describeBatch(b));
    });
  batches
    .command('list')
    .description("the workspace's batches, newest first")
    .action(async () => {
      const page = await client().batches.list();
      print(globals(), page, () => page.data.map(describeBatch).join('\n') || 'no batches');
    });
  batches
    .command('wait')
    .description('follow a batch to its end')
    .argument('<id>', 'batch id (bat_…)')
    .action((id: string) => follow(client(), id, globals()));
  batches
    .command('cancel')
    .description('cancel a batch: its items not started are canceled and never charged')
    .argument('<id>', 'batch id (bat_…)')
    .action(async (id: string) => {
      const b = (await client().batches.cancel(id)).data;
      print(globals(), b, () => describeBatch(b));
    });
  batches
    .command('retry')
    .description('run the failed items of a batch again, each as a new job')
    .argument('<id>', 'batch id (bat_…)')
    .action(async (id: string) => {
      const b = (await client().batches.retry(id)).data;
      print(globals(), b, () => describeBatch(b));
    });
  batches
    .command('manifest')
    .description("a batch's manifest, once every item ended: one row per item (custom_id, job_id, status, output_urls, credits)")
    .argument('<id>', 'batch id (bat_…)')
    .option('--format <format>', 'json, jsonl or csv', 'json')
    .action(async (id: string, o: { format: string }) => {
      if (o.format === 'jsonl' || o.format === 'csv') {
        process.stdout.write(await client().batches.manifestText(id, o.format));
        return;
      }
      if (o.format !== 'json') usageError('--format is json, jsonl or csv');
      const rows = (await client().batches.manifest(id)).data;
      print(globals(), rows, () =>
        table(
          rows.map((r) => ({ custom_id: r.custom_id, job: r.job_id ?? '-', status: r.status, credits: r.credits, outputs: r.output_urls.length })),
          ['custom_id', 'job', 'status', 'credits', 'outputs'],
        ),
      );
    });
}
