// Benchmark (not a test): the API's two hot paths, status polls and creates, on the real stack in
// the environment (eval "$(scripts/stack.sh up test)"), each against its floor in the same run, in
// alternating rounds:
//   - the real gateway (`node dist/api/server.js`, its own process, NODE_ENV=production, tracing
//     off, rate limits on with limits high enough not to refuse, logging at its default level);
//   - a bare Express + pg process: for polls the same primary-key select on the same Postgres,
//     answered as JSON; for creates one Postgres statement (one implicit transaction) inserting the
//     job and one Temporal workflow start.
// Polls run in two cases: one completed job, and 200 distinct in-flight jobs (rows in `generating`
// with stored progress, not yet submitted, so each also counts its queue position) round robin;
// each closed loop (20 connections: req/s) and open loop (500 req/s, evenly spaced sends, latency
// from each request's scheduled send time: p50/p99). Creates run closed loop (10 connections);
// their workflows wait on task queues no worker polls. Beside each ratio it prints what one
// request costs each side: Postgres statements (round trips; the `begin`s among them) counted in
// the process (scripts/bench/pg-count.ts) and CPU ms from /proc. It asserts nothing.
//
//   npm run build:all && npm run bench:status [-- seconds-per-round=4 rounds=3]
//   (BENCH_PROFILE_DIR=<dir> also writes the gateway's CPU profile there: docs/contributing.md)
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { createTestDatabase, createTenant, insertImageJob } from '../../test/support/stack.js';
import { agent, closedLoop, openLoop, type RoundResult, type Target } from './load.js';
import { cpuMs, loadavg, pgCountEnv, readPgCounts, settle, type PgCounts } from './processes.js';

const IN_FLIGHT = 200;
const CONNECTIONS = 20;
const OPEN_RATE = 500;
const CREATE_CONNECTIONS = 10;

// ------------------------------------------------------------------ the bare baseline (child mode)

async function serveBare(databaseUrl: string): Promise<void> {
  const { default: express } = await import('express');
  const { default: pg } = await import('pg');
  const { Client, Connection } = await import('@temporalio/client');
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  const temporal = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }) });
  const taskQueue = `bench-floor-${randomBytes(6).toString('hex')}`;
  const app = express();
  app.get('/jobs/:id', async (req, res) => {
    const r = await pool.query('select * from jobs where id = $1 and workspace_id = $2', [req.params.id, req.query.ws]);
    if (!r.rows[0]) return void res.status(404).json({ error: { code: 'not_found', message: 'no such job' } });
    res.json({ data: r.rows[0] });
  });
  // The create's floor: one statement writing the job, then one workflow start (nobody polls its queue).
  app.post('/jobs', express.json(), async (req, res) => {
    const id = `bench_${randomBytes(12).toString('hex')}`;
    await pool.query('insert into bench_floor_jobs (id, workspace_id, body) values ($1, $2, $3)', [id, req.query.ws, req.body]);
    await temporal.workflow.start('imageGeneration', { workflowId: id, taskQueue, args: [{ jobId: id, ...req.body }], workflowRunTimeout: '10m' });
    res.json({ data: { id, status: 'pending' } });
  });
  const server = app.listen(0, '127.0.0.1', () => {
    process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
  });
  server.keepAliveTimeout = 65_000;
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

interface Side {
  pid: number;
  counts: string;
}

/** What one request cost a process over a set of rounds: statements (and transactions) and CPU ms. */
function costOf(before: { cpu: number; pg: PgCounts }, side: Side, requests: number) {
  const pg = readPgCounts(side.counts);
  return {
    statements: (pg.queries - before.pg.queries) / requests,
    transactions: (pg.transactions - before.pg.transactions) / requests,
    cpuMs: (cpuMs(side.pid) - before.cpu) / requests,
  };
}

const snapshot = (side: Side) => ({ cpu: cpuMs(side.pid), pg: readPgCounts(side.counts) });
const fmtCost = (c: ReturnType<typeof costOf>) =>
  `${c.statements.toFixed(2)} Postgres statements (round trips; ${c.transactions.toFixed(2)} begin), ${c.cpuMs.toFixed(2)} ms CPU`;
const fmt = (r: RoundResult) =>
  `${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(2).padStart(6)} ms  p99 ${r.p99.toFixed(2).padStart(7)} ms${r.errors ? `  ${r.errors} non-200` : ''}`;
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

/** Alternating rounds of one case; prints each round, the ratios and each side's cost per request. */
async function runCase(
  c: { name: string; gateway: Target; bare: Target; open: boolean; connections: number; target: number },
  sides: Record<string, Side>,
  seconds: number,
  rounds: number,
) {
  console.log(`\n== ${c.name}`);
  const closed: Record<string, RoundResult[]> = { gateway: [], bare: [] };
  const open: Record<string, RoundResult[]> = { gateway: [], bare: [] };
  const requests: Record<string, number> = { gateway: 0, bare: 0 };
  const costs: Record<string, { cpu: number; pg: PgCounts }[]> = { gateway: [], bare: [] };
  const textsBefore = readPgCounts(sides.gateway!.counts).texts ?? {};
  const measure = async (target: Target, run: () => Promise<RoundResult>) => {
    await settle(150);
    const before = snapshot(sides[target.name]!);
    const res = await run();
    await settle(150);
    const after = costOf(before, sides[target.name]!, 1);
    requests[target.name]! += res.requests;
    costs[target.name]!.push({ cpu: after.cpuMs, pg: { queries: after.statements, transactions: after.transactions, connects: 0, open: 0, peakOpen: 0 } });
    return res;
  };
  for (let r = 0; r < rounds; r++) {
    for (const target of [c.gateway, c.bare]) {
      const res = await measure(target, () => closedLoop(target, seconds, c.connections));
      closed[target.name]!.push(res);
      console.log(`closed  round ${r + 1}  ${target.name.padEnd(7)} ${fmt(res)}`);
    }
  }
  for (let r = 0; c.open && r < rounds; r++) {
    for (const target of [c.gateway, c.bare]) {
      const res = await measure(target, () => openLoop(target, seconds, OPEN_RATE));
      open[target.name]!.push(res);
      console.log(`open    round ${r + 1}  ${target.name.padEnd(7)} ${fmt(res)}`);
    }
  }
  const gRps = median(closed.gateway!.map((x) => x.rps));
  const bRps = median(closed.bare!.map((x) => x.rps));
  console.log(
    `closed loop, median of rounds: gateway ${gRps.toFixed(0)} req/s, bare ${bRps.toFixed(0)} req/s, ratio ${(gRps / bRps).toFixed(2)} (target >= ${c.target})`,
  );
  if (c.open) {
    const g99 = median(open.gateway!.map((x) => x.p99));
    const b99 = median(open.bare!.map((x) => x.p99));
    const g50 = median(open.gateway!.map((x) => x.p50));
    const b50 = median(open.bare!.map((x) => x.p50));
    console.log(
      `open loop ${OPEN_RATE} req/s, median of rounds: gateway p50 ${g50.toFixed(2)} ms p99 ${g99.toFixed(2)} ms; bare p50 ${b50.toFixed(2)} ms p99 ${b99.toFixed(2)} ms (target: gateway p99 <= 30 ms)`,
    );
  } else {
    const g = closed.gateway!;
    const b = closed.bare!;
    console.log(
      `closed loop latency, median of rounds: gateway p50 ${median(g.map((x) => x.p50)).toFixed(2)} ms p99 ${median(g.map((x) => x.p99)).toFixed(2)} ms; bare p50 ${median(b.map((x) => x.p50)).toFixed(2)} ms p99 ${median(b.map((x) => x.p99)).toFixed(2)} ms`,
    );
  }
  const gatewayTexts = (counts: PgCounts) => counts.texts ?? {};
  const textsAfter = gatewayTexts(readPgCounts(sides.gateway!.counts));
  const byText = Object.entries(textsAfter)
    .map(([text, n]) => [text, n - (textsBefore[text] ?? 0)] as const)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6);
  for (const name of ['gateway', 'bare']) {
    const sum = costs[name]!.reduce((a, x) => ({ cpu: a.cpu + x.cpu, q: a.q + x.pg.queries, t: a.t + x.pg.transactions }), { cpu: 0, q: 0, t: 0 });
    const n = requests[name]!;
    console.log(`per request, ${name.padEnd(7)}: ${fmtCost({ statements: sum.q / n, transactions: sum.t / n, cpuMs: sum.cpu / n })}`);
  }
  for (const [text, n] of byText) console.log(`  gateway statements per request: ${(n / requests.gateway!).toFixed(3)}  ${text}`);
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 4);
  const rounds = Number(process.argv[3] ?? 3);
  const load0 = loadavg();
  const tdb = await createTestDatabase();
  const self = fileURLToPath(import.meta.url);
  const serverEntry = fileURLToPath(new URL('../../api/server.js', import.meta.url));
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-status-'));
  let gateway: ChildProcess | undefined;
  let bare: ChildProcess | undefined;
  try {
    const t = await createTenant(tdb.db, 100_000_000);
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
    await sql`create table bench_floor_jobs (id text primary key, workspace_id text not null, body jsonb not null, created_at timestamptz not null default now())`.execute(
      tdb.db,
    );

    // Tracing off: the figures are the request path's own.
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    // BENCH_PROFILE_DIR=/tmp/prof writes the gateway's CPU profile there (open it in Chrome DevTools).
    const profile = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
    const gwCounts = path.join(tmp, 'gateway.json');
    const bareCounts = path.join(tmp, 'bare.json');
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
        TASK_QUEUE_PREFIX: `bench-status-${randomBytes(4).toString('hex')}`,
        // Rate limits on, high enough that the benchmark's single key is never refused.
        RATE_LIMIT_POLL_PER_MIN: '100000000',
        RATE_LIMIT_GENERATE_PER_MIN: '100000000',
        // The stack's providers are the local renderer (creates render nothing here: no worker runs).
        ALLOW_PLACEHOLDER_PROVIDERS: '1',
        ...pgCountEnv(gwCounts),
      },
      /"msg":"listening on http:\/\/127\.0\.0\.1:(\d+)"/,
    );
    gateway = gw.child;
    const b = await spawnServer([self, 'bare-server', tdb.url], pgCountEnv(bareCounts), /^listening (\d+)$/);
    bare = b.child;
    const sides: Record<string, Side> = { gateway: { pid: gateway.pid!, counts: gwCounts }, bare: { pid: bare.pid!, counts: bareCounts } };

    const auth = { authorization: `Bearer ${t.apiKey}` };
    const createBody = (i: number) => JSON.stringify({ project_id: t.projectId, prompt: `bench ${i}`, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
    const cases = [
      {
        name: 'poll: one completed job',
        gateway: { name: 'gateway', port: gw.port, path: () => `/v1/images/${completed}`, headers: auth },
        bare: { name: 'bare', port: b.port, path: () => `/jobs/${completed}?ws=${t.workspaceId}`, headers: {} },
        open: true,
        connections: CONNECTIONS,
        target: 0.6,
      },
      {
        name: `poll: ${IN_FLIGHT} in-flight jobs, round robin`,
        gateway: { name: 'gateway', port: gw.port, path: (i: number) => `/v1/images/${inFlight[i % IN_FLIGHT]}`, headers: auth },
        bare: { name: 'bare', port: b.port, path: (i: number) => `/jobs/${inFlight[i % IN_FLIGHT]}?ws=${t.workspaceId}`, headers: {} },
        open: true,
        connections: CONNECTIONS,
        target: 0.6,
      },
      {
        name: 'create: POST /v1/images/generate (nano-banana-2) vs one statement + one workflow start',
        gateway: { name: 'gateway', port: gw.port, method: 'POST' as const, path: () => '/v1/images/generate', headers: auth, body: createBody },
        bare: { name: 'bare', port: b.port, method: 'POST' as const, path: () => `/jobs?ws=${t.workspaceId}`, headers: {}, body: createBody },
        open: false,
        connections: CREATE_CONNECTIONS,
        target: 0.7,
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

    console.log(`bench:status on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown cpu'}), node ${process.version}, load average ${load0}`);
    console.log(
      `rounds: ${rounds} per target and mode, ${seconds} s each, alternating gateway / bare; polls: closed loop ${CONNECTIONS} connections, open loop ${OPEN_RATE} req/s; creates: closed loop ${CREATE_CONNECTIONS} connections`,
    );
    console.log(`in-flight answers without progress: ${withoutProgress} of ${IN_FLIGHT}`);
    // Warm both (JIT, pools, key cache).
    for (const c of cases) for (const target of [c.gateway, c.bare]) await closedLoop(target, 1, c.connections);

    for (const c of cases) await runCase(c, sides, seconds, rounds);
    console.log(`\nload average at the end: ${loadavg()}`);
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
