// Benchmark (not a test): the read path (status polls, GET /v1/images/{id}) on the cluster profile
// (scripts/stack.sh up cluster) through a Temporal history-host kill and a Postgres failover. Closed
// loop, CONNECTIONS pollers spread over both gateways and over IN_FLIGHT job rows; after a warm-up
// it kills temporal-history-1 (SIGKILL), then the Postgres primary (Patroni promotes the standby),
// and prints, per phase and overall, the requests answered, the errors (anything but 200, network
// errors included), the latency p50/p99 and the longest gap between two successful answers. The
// profile's processes run with a poll rate limit that does not refuse (its overrides file) during
// the run; `up cluster` at the end brings the killed processes back and the profile's own settings.
//
//   npm run bench:cluster-status [-- seconds-per-phase=30]
import { performance } from 'node:perf_hooks';
import { createTenant, insertImageJob } from '../../test/support/stack.js';
import { openProfileSuite } from '../../test/support/profile-stack.js';
import { clusterFaults } from '../../test/support/cluster-faults.js';

const CONNECTIONS = 10;
const IN_FLIGHT = 50;
const arg = (name: string, dflt: number) => Number(process.argv.find((a) => a.startsWith(`${name}=`))?.split('=')[1] ?? dflt);
const PHASE_S = arg('seconds-per-phase', 30);

interface Phase {
  name: string;
  ok: number;
  errors: number;
  latencies: number[];
  longestGapMs: number;
}

async function main() {
  const suite = await openProfileSuite('cluster', { overrides: { RATE_LIMIT_POLL_PER_MIN: '1000000' } });
  const { stack, db } = suite;
  const faults = clusterFaults(stack);
  try {
    const t = await createTenant(db, 1_000_000);
    const ids: string[] = [];
    for (let i = 0; i < IN_FLIGHT; i++) ids.push((await insertImageJob(db, t, { prompt: `bench ${i}` })).id);
    const phases: Phase[] = [];
    let phase: Phase = { name: 'warm-up', ok: 0, errors: 0, latencies: [], longestGapMs: 0 };
    phases.push(phase);
    let lastOk = performance.now();
    let overallGap = 0;
    let stop = false;
    const errorsSeen = new Map<string, number>();
    const poller = async (n: number) => {
      for (let i = n; !stop; i += CONNECTIONS) {
        const url = `${stack.gateways[i % stack.gateways.length]}/v1/images/${ids[i % ids.length]}`;
        const t0 = performance.now();
        let what = '';
        try {
          const res = await fetch(url, { headers: { authorization: `Bearer ${t.apiKey}` }, signal: AbortSignal.timeout(10_000) });
          await res.arrayBuffer();
          if (res.status !== 200) what = `HTTP ${res.status}`;
        } catch (err) {
          what = (err as Error).name === 'TimeoutError' ? 'timeout (10 s)' : `network: ${(err as Error).message}`;
        }
        const now = performance.now();
        if (what) {
          phase.errors++;
          errorsSeen.set(what, (errorsSeen.get(what) ?? 0) + 1);
          continue;
        }
        phase.ok++;
        phase.latencies.push(now - t0);
        const gap = now - lastOk;
        phase.longestGapMs = Math.max(phase.longestGapMs, gap);
        overallGap = Math.max(overallGap, gap);
        lastOk = now;
      }
    };
    const pollers = Array.from({ length: CONNECTIONS }, (_, n) => poller(n));
    const next = async (name: string, fault: () => Promise<string>) => {
      await new Promise((resolve) => setTimeout(resolve, PHASE_S * 1000));
      phase = { name, ok: 0, errors: 0, latencies: [], longestGapMs: 0 };
      phases.push(phase);
      console.log(`[bench] ${(await fault()).trim().replace(/\n/g, '; ')}`);
    };
    await next('history host killed', () => faults.fault('kill', 'temporal-history-1'));
    const primary = await faults.leader();
    await next('Postgres primary killed', () => faults.fault('kill', 'pg-primary'));
    await new Promise((resolve) => setTimeout(resolve, PHASE_S * 1000));
    stop = true;
    await Promise.all(pollers);
    console.log(`[bench] Postgres leader: ${primary} before, ${await faults.leader()} after`);
    const pct = (xs: number[], p: number) => (xs.length ? xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!.toFixed(1) : '-');
    console.log(
      `[bench] status polls, ${CONNECTIONS} connections closed loop over ${IN_FLIGHT} jobs and ${stack.gateways.length} gateways, ${PHASE_S} s per phase`,
    );
    console.log('phase                      ok     errors   p50 ms   p99 ms   longest gap ms');
    for (const p of phases) {
      console.log(
        `${p.name.padEnd(25)} ${String(p.ok).padStart(6)} ${String(p.errors).padStart(8)} ${pct(p.latencies, 0.5).padStart(8)} ${pct(p.latencies, 0.99).padStart(8)} ${p.longestGapMs.toFixed(0).padStart(14)}`,
      );
    }
    const errors = phases.reduce((s, p) => s + p.errors, 0);
    console.log(
      `[bench] errors: ${errors}${errors ? ` (${[...errorsSeen].map(([k, v]) => `${k} ×${v}`).join(', ')})` : ''}; longest gap without an answer: ${overallGap.toFixed(0)} ms`,
    );
  } finally {
    await faults.healAll();
    await suite.close();
  }
}

await main();
