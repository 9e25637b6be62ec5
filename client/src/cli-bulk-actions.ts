// `mediagen jobs cancel|retry|delete [IDS...] [--filter KEY=VALUE ...] [--wait]` and
// `mediagen jobs bulk-action ID` (docs/api/bulk-actions.md): one bulk action over the jobs named, or
// over those the filter matches (the job lists' filters: project_id, kind, status, model, priority,
// created_after, created_before, tag — repeatable — and metadata.KEY). With --wait the counts go to
// stderr as they move and the final record to stdout.
import type { Command } from 'commander';
import type { BulkAction, BulkActionCreate, MediaGenClient } from './client.js';
import { MediaGenError } from './errors.js';
import { collect, print, usageError, type GlobalOpts } from './cli-support.js';

type Filter = NonNullable<BulkActionCreate['filter']>;

const FILTER_KEYS = ['project_id', 'kind', 'status', 'model', 'priority', 'created_after', 'created_before', 'tag', 'metadata.KEY'];

/** The `--filter KEY=VALUE` pairs as the API's filter object. */
export function filterOf(pairs: readonly string[]): Filter {
  const f: Record<string, unknown> = {};
  const tags: string[] = [];
  const metadata: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) usageError(`--filter takes KEY=VALUE, got "${pair}" (keys: ${FILTER_KEYS.join(', ')})`);
    const key = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    if (key === 'tag') tags.push(value);
    else if (key.startsWith('metadata.')) metadata[key.slice('metadata.'.length)] = value;
    else if (key === 'created_after' || key === 'created_before') {
      if (!/^[0-9]+$/.test(value)) usageError(`--filter ${key} takes milliseconds since the Unix epoch, got "${value}"`);
      f[key] = Number(value);
    } else if (FILTER_KEYS.includes(key)) f[key] = value;
    else usageError(`--filter: unknown key "${key}" (keys: ${FILTER_KEYS.join(', ')})`);
  }
  if (tags.length) f.tag = tags.length === 1 ? tags[0] : tags;
  if (Object.keys(metadata).length) f.metadata = metadata;
  return f as Filter;
}

const countsText = (a: BulkAction) =>
  Object.entries(a.counts)
    .filter(([, n]) => n > 0)
    .map(([s, n]) => `${s} ${n}`)
    .join(', ');

export const describeBulkAction = (a: BulkAction) => `${a.id}  ${a.action} · ${a.status} · ${a.job_count} jobs (${countsText(a) || 'none'})`;

async function follow(c: MediaGenClient, id: string, opts: GlobalOpts): Promise<void> {
  const abort = new AbortController();
  const onSigint = () =>
    abort.abort(new MediaGenError({ status: 0, code: 'interrupted', message: `stopped waiting (the action ${id} goes on; mediagen jobs bulk-action ${id})` }));
  process.once('SIGINT', onSigint);
  try {
    const a = await c.bulkActions.wait(id, { signal: abort.signal, onUpdate: (now) => process.stderr.write(`${describeBulkAction(now)}\n`) });
    print(opts, a, () => describeBulkAction(a));
  } finally {
    process.off('SIGINT', onSigint);
  }
}

const what = {
  cancel: 'cancel jobs in flight, each refunded by the cancel rules',
  retry: 'run failed jobs again, each as a new job charged its price (canceled ones are not retried)',
  delete: 'delete the outputs of finished jobs',
} as const;

export function addBulkActionCommands(jobs: Command, client: () => MediaGenClient, globals: () => GlobalOpts): void {
  for (const action of ['cancel', 'retry', 'delete'] as const) {
    jobs
      .command(action)
      .description(`${what[action]}: the jobs named, or those --filter matches (one bulk action, at most 1000 jobs)`)
      .argument('[ids...]', 'job ids (img_…, vid_…, rpl_…, tlk_…)')
      .option('--filter <key=value>', `a job-list filter (repeatable: all of them): ${FILTER_KEYS.join(', ')}`, collect)
      .option('--all', 'every job of the workspace the action takes (no filter)')
      .option('--wait', 'follow it to its end: the counts on stderr, the final record on stdout')
      .action(async (ids: string[], o: { filter?: string[]; all?: boolean; wait?: boolean }) => {
        const filtered = (o.filter?.length ?? 0) > 0 || o.all === true;
        if (ids.length > 0 && filtered) usageError('give job ids or a filter, not both');
        if (ids.length === 0 && !filtered) usageError('give job ids, --filter KEY=VALUE, or --all');
        const body: BulkActionCreate = ids.length > 0 ? { action, ids } : { action, filter: filterOf(o.filter ?? []) };
        const c = client();
        const a = (await c.bulkActions.create(body)).data;
        if (!o.wait) return print(globals(), a, () => `${describeBulkAction(a)}\n  follow it: mediagen jobs bulk-action ${a.id}`);
        process.stderr.write(`${a.id}  created\n`);
        await follow(c, a.id, globals());
      });
  }
  jobs
    .command('bulk-action')
    .description('show a bulk action: its status and its jobs counted by outcome')
    .argument('<id>', 'bulk action id (bulk_…)')
    .option('--wait', 'follow it to its end')
    .action(async (id: string, o: { wait?: boolean }) => {
      if (o.wait) return follow(client(), id, globals());
      const a = (await client().bulkActions.get(id)).data;
      print(globals(), a, () => describeBulkAction(a));
    });
}
