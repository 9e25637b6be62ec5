// Load generation of the request benchmarks (scripts/bench/status.ts): keep-alive HTTP requests,
// closed loop (N connections, each sending its next request when the last answered) and open loop
// (evenly spaced sends, latency counted from each request's scheduled time).
import http from 'node:http';
import { performance } from 'node:perf_hooks';

export interface Target {
  name: string;
  port: number;
  method?: 'GET' | 'POST';
  path(i: number): string;
  headers: Record<string, string>;
  /** A POST's JSON body for its i-th request. */
  body?(i: number): string;
}

export interface RoundResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  requests: number;
  seconds: number;
}

export const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

export function request(target: Target, i: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = target.body?.(i);
    const headers =
      body === undefined ? target.headers : { ...target.headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
    const req = http.request({ host: '127.0.0.1', port: target.port, method: target.method ?? 'GET', path: target.path(i), headers, agent }, (res) => {
      res.on('data', () => undefined);
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

export async function closedLoop(target: Target, seconds: number, connections: number): Promise<RoundResult> {
  const latencies: number[] = [];
  let errors = 0;
  let i = 0;
  const end = performance.now() + seconds * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
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
  return {
    rps: latencies.length / elapsed,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    errors,
    requests: latencies.length,
    seconds: elapsed,
  };
}

export async function openLoop(target: Target, seconds: number, rate: number): Promise<RoundResult> {
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
  return { rps: latencies.length / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), errors, requests: latencies.length, seconds };
}
