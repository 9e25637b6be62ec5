// bench-scale's measuring (scripts/bench/scale.ts): timed calls, the two sides served in
// alternation, percentiles and the printed table.
import http from 'node:http';
import type { Database } from '../../db/index.js';
import type { Config } from '../../shared/config.js';
import type { Tenant } from '../../test/support/stack.js';
import type { InProcessGateway, Workers } from '../../test/support/services.js';

export const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

export function call(
  baseUrl: string,
  method: string,
  path: string,
  key: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; ms: number; body: string }> {
  const u = new URL(path, baseUrl);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method,
        agent,
        headers: { authorization: `Bearer ${key}`, ...(payload ? { 'content-type': 'application/json' } : {}), ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

export const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};

export interface Side {
  name: 'empty' | 'full';
  db: Database;
  config: Config;
  gw: InProcessGateway;
  workers: Workers;
  tenant: Tenant;
  project2: string;
  jobIds: string[];
}

/** `n` rounds of one request to each side, in alternating order; returns each side's latencies. */
export async function alternate(
  sides: [Side, Side],
  n: number,
  request: (side: Side, i: number) => Promise<{ status: number; ms: number }>,
): Promise<[number[], number[]]> {
  const out: [number[], number[]] = [[], []];
  for (let i = 0; i < n; i++) {
    const order = i % 2 === 0 ? [0, 1] : [1, 0];
    for (const k of order) {
      const r = await request(sides[k]!, i);
      if (r.status !== 200) throw new Error(`${sides[k]!.name}: HTTP ${r.status}`);
      out[k]!.push(r.ms);
    }
  }
  return out;
}

export const rows: string[][] = [];
export function report(label: string, q: number, lat: [number[], number[]]) {
  const [e, f] = [pct(lat[0], q), pct(lat[1], q)];
  rows.push([label, e.toFixed(2), f.toFixed(2), (f / e).toFixed(2)]);
}

export function printTable(head: string[], body: string[][]) {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(head));
  for (const r of body) console.log(line(r));
}
