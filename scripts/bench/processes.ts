// Helpers of the capacity benchmark (scripts/bench/capacity.ts): built processes of ours run apart
// from the load generator, their CPU time and memory read from /proc, and their Postgres counts
// (scripts/bench/pg-count.ts) read back.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { waitFor } from '../../test/support/stack.js';

const USER_HZ = 100; // clock ticks per second of /proc/<pid>/stat on Linux
const pgCountHook = pathToFileURL(fileURLToPath(new URL('./pg-count.js', import.meta.url))).href;
const workerMain = fileURLToPath(new URL('../../worker/main.js', import.meta.url));

/** CPU time (user + system, every thread) the process has used so far, in ms. */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
}

/** Resident set size now, in MB. */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) / 1024;
}

export function machine(): string {
  const cpus = os.cpus();
  return `${cpus.length} cores (${cpus[0]?.model ?? 'unknown CPU'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`;
}

export const loadavg = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

export interface PgCounts {
  queries: number;
  transactions: number;
  connects: number;
  open: number;
  peakOpen: number;
  /** Statements by their first 60 characters. */
  texts?: Record<string, number>;
}

/** The environment that makes a child process count its Postgres traffic into `file`. */
export function pgCountEnv(file: string): Record<string, string> {
  return { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${pgCountHook}`.trim(), BENCH_PG_COUNT_FILE: file };
}

/** The process's counts as last written (it writes every 100 ms: wait that long after a phase). */
export function readPgCounts(file: string): PgCounts {
  if (!existsSync(file)) return { queries: 0, transactions: 0, connects: 0, open: 0, peakOpen: 0 };
  return JSON.parse(readFileSync(file, 'utf8')) as PgCounts;
}

export const settle = (ms = 300) => new Promise((r) => setTimeout(r, ms));

export interface BenchProcess {
  child: ChildProcess;
  pid: number;
  output(): string;
  /** SIGTERM (or SIGKILL: no graceful drain), resolved once it exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** A built worker process (`node dist/worker/main.js --roles …`); resolves once it logged "worker started" (it polls). */
export async function spawnWorker(roles: string, env: Record<string, string>): Promise<BenchProcess> {
  const child = spawn(process.execPath, [workerMain, '--roles', roles], {
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'info', WORKER_METRICS_PORT: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  const exited = once(child, 'exit');
  await Promise.race([
    waitFor(`worker ${roles} to start`, () => out.includes('"msg":"worker started"'), 120_000, 50),
    exited.then(([code]) => {
      throw new Error(`worker ${roles} exited with ${String(code)} before starting:\n${out}`);
    }),
  ]);
  return {
    child,
    pid: child.pid!,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      await exited;
    },
  };
}
