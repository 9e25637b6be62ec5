// `mediagen pipelines run FILE.json [--wait] [--dry-run]`, `get ID`, `wait ID`, `resume ID [--body FILE] [--wait]`,
// `cancel ID` and `receipt ID`. A file argument may be `-` (standard input). With --wait each step's
// progress goes to stderr as it moves and the final record to stdout; a pipeline that ends failed
// exits with code 6 (as a failed job does).
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { MediaGenClient, Pipeline, PipelineCreate } from './client.js';
import { MediaGenError } from './errors.js';
import { print, table, usageError, type GlobalOpts } from './cli-support.js';

/** The JSON object in FILE, or on standard input for `-`. */
export async function readJson(file: string, what: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    if (file === '-') {
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      text = Buffer.concat(chunks).toString('utf8');
    } else text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new MediaGenError({ status: 0, code: 'file_not_found', message: `${file}: no such file` });
    throw err;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    usageError(`${file === '-' ? 'standard input' : file} is not JSON (${what}): ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    usageError(`${file === '-' ? 'standard input' : file} must hold a JSON object (${what})`);
  return value as Record<string, unknown>;
}

function stepState(s: Pipeline['steps'][number]): string {
  const p = s.progress;
  const progress = p ? ` · ${p.phase}${p.percent !== null ? ` ${Math.round(p.percent)}%` : ''}` : '';
  return `${s.status}${progress}`;
}

/** The pipeline in words: its status and charges, then one line per step. */
export function describePipeline(p: Pipeline): string {
  const err = p.error ? ` · ${p.error.code}: ${p.error.message}` : '';
  const rows = p.steps.map((s) => ({
    step: s.id,
    kind: s.kind,
    model: s.model,
    status: stepState(s),
    job: s.job_id ?? '-',
    outputs: s.outputs.map((o) => o.upload_id).join(' ') || '-',
    charged: s.charged - s.refunded,
  }));
  return (
    `${p.id}  ${p.status} · price ${p.price} · charged ${p.charged}${err}\n` + table(rows, ['step', 'kind', 'model', 'status', 'job', 'outputs', 'charged'])
  );
}

/** Follows the pipeline to its end, a line on stderr for each step that moved; prints the final record; throws when it failed. */
async function follow(c: MediaGenClient, id: string, opts: GlobalOpts): Promise<void> {
  const abort = new AbortController();
  const onSigint = () =>
    abort.abort(new MediaGenError({ status: 0, code: 'interrupted', message: `stopped waiting (the pipeline ${id} goes on; mediagen pipelines wait ${id})` }));
  process.once('SIGINT', onSigint);
  const shown = new Map<string, string>();
  let status = '';
  try {
    const p = await c.pipelines.wait(id, {
      signal: abort.signal,
      onUpdate: (now) => {
        if (now.status !== status) process.stderr.write(`${now.id}  ${(status = now.status)}\n`);
        for (const s of now.steps) {
          const line = `  ${s.id}  ${stepState(s)}${s.job_id ? `  ${s.job_id}` : ''}`;
          if (shown.get(s.id) === line) continue;
          shown.set(s.id, line);
          process.stderr.write(line + '\n');
        }
      },
    });
    print(opts, p, () => describePipeline(p));
    if (p.status === 'failed') {
      throw new MediaGenError({ status: 409, code: 'pipeline_failed', message: `pipeline ${p.id} failed: ${p.error?.message ?? 'no reason given'}`, body: p });
    }
  } finally {
    process.off('SIGINT', onSigint);
  }
}

export function addPipelineCommands(program: Command, client: () => MediaGenClient, globals: () => GlobalOpts): void {
  const pipelines = program.command('pipelines').description('several generations run in order as one durable job (docs/api/pipelines.md)');
  pipelines
    .command('run')
    .description('create a pipeline from a JSON create body ({"project_id", "steps": [...]}) and print it')
    .argument('<file>', 'the create body: a JSON file, or - for standard input')
    .option('--wait', "follow it to its end: each step's progress on stderr, the final record on stdout (exit code 6 if it failed)")
    .option('--dry-run', "validate it and print the quote (each step's price) instead, creating and charging nothing")
    .action(async (file: string, o: { wait?: boolean; dryRun?: boolean }) => {
      if (o.wait && o.dryRun) usageError('--wait and --dry-run do not go together');
      const body = (await readJson(file, 'a pipeline create body')) as PipelineCreate;
      const c = client();
      if (o.dryRun) {
        const quote = (await c.pipelines.create(body, { dryRun: true })).data as {
          price: number;
          steps: { id: string; price: number }[];
          available: number;
          sufficient: boolean;
        };
        print(
          globals(),
          quote,
          () => `price ${quote.price} (available ${quote.available}${quote.sufficient ? '' : ', NOT sufficient'})\n` + table(quote.steps, ['id', 'price']),
        );
        return;
      }
      const p = (await c.pipelines.create(body)).data as Pipeline;
      if (!o.wait) return print(globals(), p, () => `${describePipeline(p)}\n  follow it: mediagen pipelines wait ${p.id}`);
      process.stderr.write(`${p.id}  created\n`);
      await follow(c, p.id, globals());
    });
  pipelines
    .command('get')
    .description("show a pipeline: its status and each step's job, progress, outputs and charges")
    .argument('<id>', 'pipeline id (pl_…)')
    .action(async (id: string) => {
      const p = (await client().pipelines.get(id)).data;
      print(globals(), p, () => describePipeline(p));
    });
  pipelines
    .command('wait')
    .description('follow a pipeline to its end (exit code 6 if it failed)')
    .argument('<id>', 'pipeline id (pl_…)')
    .action((id: string) => follow(client(), id, globals()));
  pipelines
    .command('resume')
    .description('run a failed pipeline again from its failed step (steps that completed are not run or paid again)')
    .argument('<id>', 'pipeline id (pl_…)')
    .option('--body <file>', "the failed step's new body (JSON file, or - for standard input), e.g. another model")
    .option('--wait', 'follow it to its end, as run --wait')
    .action(async (id: string, o: { body?: string; wait?: boolean }) => {
      const c = client();
      const p = (await c.pipelines.resume(id, o.body !== undefined ? { body: await readJson(o.body, "the failed step's body") } : {})).data;
      if (!o.wait) return print(globals(), p, () => describePipeline(p));
      await follow(c, p.id, globals());
    });
  pipelines
    .command('cancel')
    .description("cancel a pipeline: its running step's job is canceled (refunded by the cancel rules) and no later step starts")
    .argument('<id>', 'pipeline id (pl_…)')
    .action(async (id: string) => {
      const p = (await client().pipelines.cancel(id)).data;
      print(globals(), p, () => describePipeline(p));
    });
  pipelines
    .command('receipt')
    .description("a pipeline's charges and refunds, per step and job")
    .argument('<id>', 'pipeline id (pl_…)')
    .action(async (id: string) => {
      const r = (await client().pipelines.receipt(id)).data;
      const rows = r.steps.flatMap((s) =>
        s.jobs.length
          ? s.jobs.map((j) => ({ step: s.id, status: s.status, price: s.price, job: j.job_id, charged: j.charged, refunded: j.refunded }))
          : [{ step: s.id, status: s.status, price: s.price, job: '-', charged: 0, refunded: 0 }],
      );
      print(
        globals(),
        r,
        () =>
          `${r.id}  ${r.status} · price ${r.price} · charged ${r.charged} · refunded ${r.refunded} · net ${r.net}\n` +
          table(rows, ['step', 'status', 'price', 'job', 'charged', 'refunded']),
      );
    });
}
