// Benchmark (not a test): in one run, N concurrent uploads of a ~20 MB video (just under the limit)
// three ways, against the stack in the environment (eval "$(scripts/stack.sh up test)"):
//
//   raw       minio putObject of the same bytes from this process (the reference throughput);
//   multipart POST /v1/upload through the gateway;
//   direct    POST /v1/uploads, the presigned POST straight to storage, POST /v1/uploads/{id}/complete.
//
// The gateway runs as its own process (node dist/api/server.js), so the RSS figures are its own:
// idle after start, peak growth during each way (sampled from /proc every 10 ms), idle after the
// bursts. "Idle" is read twice: 2 s after the last request, and after IDLE_MS without requests,
// by when V8's memory reducer (which runs ~10 s into an idle period) has given unused heap back.
// Uses a throw-away database and removes the objects it stored.
//
//   npm run build:all && npm run bench:uploads -- [concurrency] [megabytes]
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { MB } from '../../shared/media/type.js';
import { createTestDatabase, createTenant, rawMinioClient, testConfig, type Tenant } from '../../test/support/stack.js';
import { spawnGateway } from '../../test/integration/gateway-harness.js';

const concurrency = Number(process.argv[2] ?? 10);
const sizeBytes = Math.round(Number(process.argv[3] ?? 20) * MB) - 64 * 1024; // just under the 20 MB limit
const SETTLE_MS = 2_000;
const IDLE_MS = 30_000;

/** A minimal MP4 `ftyp` box (isom) followed by filler: sniffed as video/mp4. */
function fakeMp4(size: number): Buffer {
  const buf = Buffer.alloc(size);
  randomBytes(Math.min(size, 4 * MB)).copy(buf, 0);
  buf.writeUInt32BE(24, 0);
  buf.write('ftypisom', 4, 'latin1');
  buf.writeUInt32BE(512, 12);
  buf.write('isomiso2', 16, 'latin1');
  return buf;
}

const mb = (bytes: number) => (bytes / MB).toFixed(1);

/** Resident set size of a process, from /proc (Linux). */
function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

/** The gateway's RSS shortly after the last request, and after a longer idle period. */
async function idleRss(pid: number): Promise<{ settled: number; idle: number }> {
  await sleep(SETTLE_MS);
  const settled = rssOf(pid);
  await sleep(IDLE_MS - SETTLE_MS);
  return { settled, idle: rssOf(pid) };
}

interface Figures {
  seconds: number;
  mbPerSecond: number;
  rssBefore: number;
  rssPeak: number;
}

/** Runs `concurrency` copies of `one` at once; throughput over the payload bytes, and the gateway's RSS peak. */
async function measure(pid: number, payloadBytes: number, one: () => Promise<void>): Promise<Figures> {
  const rssBefore = rssOf(pid);
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssOf(pid))), 10);
  const started = process.hrtime.bigint();
  try {
    await Promise.all(Array.from({ length: concurrency }, one));
  } finally {
    clearInterval(sampler);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  rssPeak = Math.max(rssPeak, rssOf(pid));
  return { seconds, mbPerSecond: (payloadBytes * concurrency) / MB / seconds, rssBefore, rssPeak };
}

/** POST /v1/upload, the multipart body written by hand from the one shared payload buffer (no per-request copies). */
function multipartUpload(baseUrl: string, tenant: Tenant, payload: Buffer): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const boundary = `bench-${randomBytes(8).toString('hex')}`;
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="project_id"\r\n\r\n${tenant.projectId}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.mp4"\r\nContent-Type: video/mp4\r\n\r\n`,
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const req = http.request(`${baseUrl}/v1/upload`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tenant.apiKey}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(head.length + payload.length + tail.length),
      },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        const body = JSON.parse(text) as { data?: { file_size: number } };
        if (res.statusCode !== 200 || body.data?.file_size !== payload.length) reject(new Error(`upload failed: ${res.statusCode} ${text}`));
        else resolve();
      });
    });
    req.write(head);
    let offset = 0;
    const pump = () => {
      while (offset < payload.length) {
        const chunk = payload.subarray(offset, offset + 64 * 1024);
        offset += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end(tail);
    };
    pump();
  });
}

async function postJson(url: string, key: string, body?: unknown): Promise<any> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await res.json()) as { data?: unknown };
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${JSON.stringify(json)}`);
  return json.data;
}

/** The direct flow: create, send the bytes to storage with the presigned POST, complete. */
async function directUpload(baseUrl: string, tenant: Tenant, payload: Blob): Promise<void> {
  const created = await postJson(`${baseUrl}/v1/uploads`, tenant.apiKey, {
    project_id: tenant.projectId,
    name: 'bench.mp4',
    mime_type: 'video/mp4',
    size: payload.size,
  });
  const { url, fields } = created.upload as { url: string; fields: Record<string, string> };
  if (!/^https?:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\])[:/]/.test(url)) throw new Error('the benchmark only sends to loopback storage');
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', payload, 'bench.mp4');
  const stored = await fetch(url, { method: 'POST', body: form });
  if (stored.status !== 204) throw new Error(`storage answered ${stored.status}: ${await stored.text()}`);
  const done = await postJson(`${baseUrl}/v1/uploads/${created.id as string}/complete`, tenant.apiKey);
  if (done.status !== 'completed' || done.file_size !== payload.size) throw new Error(`complete answered ${JSON.stringify(done)}`);
}

async function main() {
  const tdb = await createTestDatabase();
  const config = testConfig(tdb.url);
  const minio = rawMinioClient(config);
  const tenant = await createTenant(tdb.db);
  const payload = fakeMp4(sizeBytes);
  const blob = new Blob([payload], { type: 'video/mp4' });
  const gateway = await spawnGateway(tdb.url, { RATE_LIMIT_GENERATE_PER_MIN: '100000', TASK_QUEUE_PREFIX: config.TASK_QUEUE_PREFIX });
  const pid = gateway.child.pid!;
  const rawKeys: string[] = [];
  try {
    const idleAfterStart = await idleRss(pid);

    // One of each first, so lazy initialisation (connections, code paths) is not counted as growth.
    await multipartUpload(gateway.baseUrl, tenant, payload);
    await directUpload(gateway.baseUrl, tenant, blob);

    let n = 0;
    const raw = await measure(pid, payload.length, async () => {
      const key = `bench/${randomBytes(8).toString('hex')}-${n++}.mp4`;
      rawKeys.push(key);
      await minio.putObject(config.S3_BUCKET, key, payload, payload.length, { 'Content-Type': 'video/mp4' });
    });
    const multipart = await measure(pid, payload.length, () => multipartUpload(gateway.baseUrl, tenant, payload));
    await sleep(SETTLE_MS);
    const direct = await measure(pid, payload.length, () => directUpload(gateway.baseUrl, tenant, blob));
    const idleAfterBurst = await idleRss(pid);

    const line = (name: string, f: Figures, gatewayRss: boolean) =>
      console.log(
        `${name.padEnd(10)} ${f.seconds.toFixed(2).padStart(6)} s  ${f.mbPerSecond.toFixed(1).padStart(6)} MB/s  ${(f.mbPerSecond / raw.mbPerSecond).toFixed(2).padStart(5)} × raw` +
          (gatewayRss ? `   gateway RSS ${mb(f.rssBefore)} → peak ${mb(f.rssPeak)} MB (growth ${mb(f.rssPeak - f.rssBefore)} MB)` : ''),
      );
    console.log(`uploads: ${concurrency} concurrent × ${mb(payload.length)} MB (video/mp4); gateway = separate process (node dist/api/server.js, pid ${pid})`);
    line('raw put', raw, false);
    line('multipart', multipart, true);
    line('direct', direct, true);
    const idle = (label: string, i: { settled: number; idle: number }) =>
      `${label} ${mb(i.settled)} MB after ${SETTLE_MS / 1000} s, ${mb(i.idle)} MB after ${IDLE_MS / 1000} s idle`;
    console.log(`gateway RSS ${idle('after start:', idleAfterStart)}; ${idle('after the bursts:', idleAfterBurst)}`);
    console.log(
      `targets: multipart growth ≤ 60 MB: ${multipart.rssPeak - multipart.rssBefore <= 60 * MB ? 'met' : 'MISSED'}; ` +
        `multipart ≥ 0.5 × raw: ${multipart.mbPerSecond >= 0.5 * raw.mbPerSecond ? 'met' : 'MISSED'}; ` +
        `idle ≤ 120 MB: ${Math.max(idleAfterStart.idle, idleAfterBurst.idle) <= 120 * MB ? 'met' : 'MISSED'}`,
    );
  } finally {
    await gateway.close();
    const rows = await tdb.db.selectFrom('file_uploads').select('object_key').execute();
    for (const key of [...rows.map((r) => r.object_key), ...rawKeys]) await minio.removeObject(config.S3_BUCKET, key).catch(() => undefined);
    await tdb.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
