// Benchmark (not a test): status polling, the API's hottest path, on the real stack in the
// environment (eval "$(scripts/stack.sh up test)"). In one run, in alternating rounds, it loads
//   - the real gateway (`node dist/api/server.js`, its own process, rate limits on with a limit
//     high enough not to refuse, logging at its default level), and
//   - a bare Express + pg handler (its own process) doing the same primary-key select on the same
//     Postgres and answering the row as JSON,
// in two cases: one completed job, and 200 distinct in-flight jobs (rows in `generating` with
// stored progress) polled round robin. Each case runs closed loop (20 connections, each sending
// its next request when the last answered: req/s) and open loop (500 req/s, evenly spaced sends,
// latency counted from each request's scheduled send time: p50/p99). It prints figures and
// asserts nothing.
//
//   npm run build:all && npm run bench:status [-- seconds-per-round=4 rounds=3]
//   (BENCH_PROFILE_DIR=<dir> also writes the gateway's CPU profile there)
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import os from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { createTestDatabase, createTenant, insertImageJob } from '../test/support/stack.js';

const IN_FLIGHT = 200;
const CONNECTIONS = 20;
const OPEN_RATE = 500;

// ------------------------------------------------------------------ the bare baseline (child mode)

async function serveBare(databaseUrl: string): Promise<void> {
  const { default: express } = await import('express');
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  const app = express();
  app.get('/jobs/:id', async (req, res) => {
    const r = await pool.query('select * from jobs where id = $1 and workspace_id = $2', [req.params.id, req.query.ws]);
    if (!r.rows[0]) return void res.status(404).json({ error: { code: 'not_found', message: 'no such job' } });
    res.json({ data: r.rows[0] });
  });
  const server = app.listen(0, '127.0.0.1', () => {
    process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
  });
  server.keepAliveTimeout = 65_000;
}

// ------------------------------------------------------------------ load generation

interface Target {
  name: string;
  port: number;
  path(i: number): string;
  headers: Record<string, string>;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

function request(target: Target, i: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: target.port, path: target.path(i), headers: target.headers, agent }, (res) => {
      res.on('data', () => undefined);
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

interface RoundResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function closedLoop(target: Target, seconds: number): Promise<RoundResult> {
  const latencies: number[] = [];
  let errors = 0;
  let i = 0;
  const end = performance.now() + seconds * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const status = await request(target, i++);
        latencies.push(performance.now() - t0);
        if (status !== 200) errors++;
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / elapsed, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), errors };
}

async function openLoop(target: Target, seconds: number, rate: number): Promise<RoundResult> {
  const total = Math.round(seconds * rate);
  const interval = 1000 / rate;
  const latencies: number[] = [];
  const inFlight: Promise<void>[] = [];
  let errors = 0;
  const start = performance.now() + 5;
  let sent = 0;
  while (sent < total) {
    const now = performance.now();
    // Send every request whose scheduled time has come; latency counts from that time, so a
    // stalled sender or server shows up as latency instead of a quietly lower rate.
    while (sent < total && start + sent * interval <= now) {
      const scheduled = start + sent * interval;
      inFlight.push(
        request(target, sent).then(
          (status) => {
            latencies.push(performance.now() - scheduled);
            if (status !== 200) errors++;
          },
          () => {
            errors++;
          },
        ),
      );
      sent++;
    }
    const wait = start + sent * interval - performance.now();
    await new Promise((r) => (wait > 1 ? setTimeout(r, Math.floor(wait)) : setImmediate(r)));
  }
  await Promise.all(inFlight);
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), errors };
}

// ------------------------------------------------------------------ processes

async function spawnServer(args: string[], env: Record<string, string>, ready: RegExp): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${stderr}`)));
    lines.on('line', (line) => {
      const m = ready.exec(line);
      if (m) resolve(Number(m[1]));
    });
  });
  return { child, port };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

// ------------------------------------------------------------------ main

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 4);
  const rounds = Number(process.argv[3] ?? 3);
  const tdb = await createTestDatabase();
  const self = fileURLToPath(import.meta.url);
  const serverEntry = fileURLToPath(new URL('../api/server.js', import.meta.url));
  let gateway: ChildProcess | undefined;
  let bare: ChildProcess | undefined;
  try {
    const t = await createTenant(tdb.db, 1_000_000);
    const insert = async () => (await insertImageJob(tdb.db, t)).id;
    const completed = await insert();
    await tdb.db
      .updateTable('jobs')
      .set({
        status: 'completed',
        phase: 'completed',
        percent: 100,
        workflow_started: true,
        outputs: JSON.stringify([{ key: `jobs/${completed}/output-1.png`, content_type: 'image/png', size: 1 }]),
      })
      .where('id', '=', completed)
      .execute();
    const inFlight: string[] = [];
    for (let i = 0; i < IN_FLIGHT; i++) inFlight.push(await insert());
    // Held in flight: generating, with the progress a provider poll would have stored.
    await tdb.db
      .updateTable('jobs')
      .set({ status: 'generating', phase: 'generating', percent: sql`(random() * 99)::int`, workflow_started: true, progress_updated_at: sql`now()` })
      .where('id', 'in', inFlight)
      .execute();
    await sql`analyze jobs`.execute(tdb.db);

    // BENCH_PROFILE_DIR=/tmp/prof writes the gateway's CPU profile there (open it in Chrome DevTools).
    const profile = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
    const gw = await spawnServer(
      [...profile, serverEntry],
      {
        DATABASE_URL: tdb.url,
        HOST: '127.0.0.1',
        PORT: '0',
        NODE_ENV: 'production',
        // Production refuses to start without its own webhook secrets key; a throwaway one per run.
        WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64'),
        LOG_LEVEL: 'info',
        // Rate limits on, high enough that the benchmark's single key is never refused.
        RATE_LIMIT_POLL_PER_MIN: '100000000',
      },
      /"msg":"listening on http:\/\/127\.0\.0\.1:(\d+)"/,
    );
    gateway = gw.child;
    const b = await spawnServer([self, 'bare-server', tdb.url], {}, /^listening (\d+)$/);
    bare = b.child;

    const auth = { authorization: `Bearer ${t.apiKey}` };
    const cases = [
      {
        name: 'one completed job',
        gateway: { name: 'gateway', port: gw.port, path: () => `/v1/images/${completed}`, headers: auth },
        bare: { name: 'bare', port: b.port, path: () => `/jobs/${completed}?ws=${t.workspaceId}`, headers: {} },
      },
      {
        name: `${IN_FLIGHT} in-flight jobs, round robin`,
        gateway: { name: 'gateway', port: gw.port, path: (i: number) => `/v1/images/${inFlight[i % IN_FLIGHT]}`, headers: auth },
        bare: { name: 'bare', port: b.port, path: (i: number) => `/jobs/${inFlight[i % IN_FLIGHT]}?ws=${t.workspaceId}`, headers: {} },
      },
    ];

    // Every in-flight answer must carry progress: checked once, outside the timed rounds.
    let withoutProgress = 0;
    for (const id of inFlight) {
      const body = await new Promise<string>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port: gw.port, path: `/v1/images/${id}`, headers: auth, agent }, (res) => {
            let text = '';
            res.setEncoding('utf8').on('data', (d: string) => (text += d));
            res.on('end', () => resolve(text));
          })
          .on('error', reject);
      });
      if (!(JSON.parse(body) as { data?: { progress?: unknown } }).data?.progress) withoutProgress++;
    }

    const fmt = (r: RoundResult) =>
      `${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(2).padStart(6)} ms  p99 ${r.p99.toFixed(2).padStart(7)} ms${r.errors ? `  ${r.errors} non-200` : ''}`;
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    console.log(`bench:status on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown cpu'}), node ${process.version}`);
    console.log(
      `rounds: ${rounds} per target and mode, ${seconds} s each, alternating gateway / bare; closed loop ${CONNECTIONS} connections; open loop ${OPEN_RATE} req/s`,
    );
    console.log(`in-flight answers without progress: ${withoutProgress} of ${IN_FLIGHT}`);
    // Warm both (JIT, pools, key cache).
    for (const c of cases) for (const target of [c.gateway, c.bare]) await closedLoop(target, 1);

    for (const c of cases) {
      console.log(`\n== ${c.name}`);
      const closed: Record<string, RoundResult[]> = { gateway: [], bare: [] };
      const open: Record<string, RoundResult[]> = { gateway: [], bare: [] };
      for (let r = 0; r < rounds; r++) {
        for (const target of [c.gateway, c.bare]) {
          const res = await closedLoop(target, seconds);
          closed[target.name]!.push(res);
          console.log(`closed  round ${r + 1}  ${target.name.padEnd(7)} ${fmt(res)}`);
        }
      }
      for (let r = 0; r < rounds; r++) {
        for (const target of [c.gateway, c.bare]) {
          const res = await openLoop(target, seconds, OPEN_RATE);
          open[target.name]!.push(res);
          console.log(`open    round ${r + 1}  ${target.name.padEnd(7)} ${fmt(res)}`);
        }
      }
      const gRps = median(closed.gateway!.map((x) => x.rps));
      const bRps = median(closed.bare!.map((x) => x.rps));
      console.log(
        `closed loop, median of rounds: gateway ${gRps.toFixed(0)} req/s, bare ${bRps.toFixed(0)} req/s, ratio ${(gRps / bRps).toFixed(2)} (target >= 0.6)`,
      );
      const g99 = median(open.gateway!.map((x) => x.p99));
      const b99 = median(open.bare!.map((x) => x.p99));
      const g50 = median(open.gateway!.map((x) => x.p50));
      const b50 = median(open.bare!.map((x) => x.p50));
      console.log(
        `open loop ${OPEN_RATE} req/s, median of rounds: gateway p50 ${g50.toFixed(2)} ms p99 ${g99.toFixed(2)} ms; bare p50 ${b50.toFixed(2)} ms p99 ${b99.toFixed(2)} ms (target: gateway p99 <= 15 ms)`,
      );
    }
  } finally {
    agent.destroy();
    if (gateway) await stop(gateway);
    if (bare) await stop(bare);
    await tdb.drop();
  }
}

if (process.argv[2] === 'bare-server') {
  serveBare(process.argv[3]!).catch((err: unknown) => {
    process.stderr.write(`bare server failed: ${String(err)}\n`);
    process.exit(1);
  });
} else {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
