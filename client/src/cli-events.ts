// `mediagen events`: the workspace's event log (GET /v1/events). Without --follow, every event after
// --after (default 0) until caught up, one line each (--json: one JSON object per line); with
// --follow, then each new one as it happens, through the SSE stream, reconnecting with the last seq
// seen, until interrupted.
import type { Command } from 'commander';
import type { MediaGenClient } from './client.js';
import { usageError, type GlobalOpts } from './cli-support.js';
import type { WorkspaceEvent } from './workspace-events.js';

function line(e: WorkspaceEvent, json: boolean | undefined): string {
  if (json) return JSON.stringify(e);
  const d = e.data as { status?: string; id?: string };
  return `${e.seq}\t${e.created_at}\t${e.type}\t${e.subject_id}\t${e.id}${d.status ? `\t${d.status}` : ''}`;
}

export function addEventsCommand(program: Command, client: () => MediaGenClient, globals: () => GlobalOpts): void {
  program
    .command('events')
    .description("the workspace's event log, oldest first: seq, time, type, subject and event id (= webhook-id)")
    .option('--after <seq>', 'only events after this seq (the last one you have)', '0')
    .option('--types <types>', 'only these types or families, comma-separated: job.completed, job.*, pipeline.*, budget.*, balance.*')
    .option('--follow', 'keep following new events (server-sent events; reconnects without losing or repeating one)')
    .action(async (o: { after: string; types?: string; follow?: boolean }) => {
      if (!/^\d{1,15}$/.test(o.after)) usageError(`--after takes a seq (a whole number); got "${o.after}"`);
      const c = client();
      const json = globals().json;
      const after = Number(o.after);
      const events = o.follow ? c.events.follow({ after, types: o.types }) : c.events.iterate({ after, types: o.types, limit: 100 });
      for await (const e of events) process.stdout.write(`${line(e, json)}\n`);
    });
}
