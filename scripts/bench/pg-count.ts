// Preloaded into a benchmarked process (`node --import <this file>`, via NODE_OPTIONS) to count its
// Postgres traffic: every query sent on a node-postgres client (the pools Kysely uses and the
// LISTEN connections alike), the transactions among them (`begin`), and the connections it holds
// open, with their peak. The counts are written as JSON to BENCH_PG_COUNT_FILE every 100 ms and at
// exit, so the benchmark reads a process's figures without touching its code.
import { writeFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';
import pg from 'pg';

const file = process.env.BENCH_PG_COUNT_FILE;
// NODE_OPTIONS preloads this into worker threads too (the Temporal SDK runs workflows in threads):
// only the main thread, where every pool lives, writes the file.
if (file && isMainThread) {
  // `texts`: statements by their first words, so a benchmark can say which statements a request paid for.
  const counts = { queries: 0, transactions: 0, connects: 0, open: 0, peakOpen: 0, texts: {} as Record<string, number> };
  const proto = pg.Client.prototype as unknown as {
    query: (...args: unknown[]) => unknown;
    connect: (...args: unknown[]) => unknown;
  };
  const query = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    counts.queries++;
    const first = args[0];
    const text = typeof first === 'string' ? first : typeof (first as { text?: unknown })?.text === 'string' ? (first as { text: string }).text : '';
    if (/^\s*begin\b/i.test(text)) counts.transactions++;
    const head = text.trim().replace(/\s+/g, ' ').slice(0, 60);
    counts.texts[head] = (counts.texts[head] ?? 0) + 1;
    return query.apply(this, args);
  };
  const connect = proto.connect;
  proto.connect = function (this: pg.Client, ...args: unknown[]) {
    counts.connects++;
    counts.open++;
    counts.peakOpen = Math.max(counts.peakOpen, counts.open);
    this.once('end', () => counts.open--);
    return connect.apply(this, args);
  };
  // Written only when something changed: a synchronous write every 100 ms would show in the
  // profiles and CPU figures of the very process being measured.
  let last = '';
  const write = () => {
    const text = JSON.stringify(counts);
    if (text === last) return;
    last = text;
    writeFileSync(file, text);
  };
  setInterval(write, 100).unref();
  process.on('exit', write);
}
