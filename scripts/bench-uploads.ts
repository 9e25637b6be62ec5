// Benchmark (not a test): ten concurrent direct uploads of a 20 MB video (just under the limit)
// through the real gateway, started in-process against the stack in the environment
// (eval "$(scripts/stack.sh env test)" or `scripts/stack.sh up`). Prints the process's RSS growth
// (peak over the run) and the aggregate throughput. Uses its own throw-away database and removes
// the objects it stored.
//
//   npm run build && node dist/scripts/bench-uploads.js [concurrency] [megabytes]
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { pino } from 'pino';
import { createApp } from '../api/app.js';
import { createStorage } from '../activities/storage.js';
import { MB } from '../activities/media-type.js';
import { createTestDatabase, createTenant, testConfig } from '../test/support/stack.js';

const concurrency = Number(process.argv[2] ?? 10);
const sizeBytes = Math.round(Number(process.argv[3] ?? 20) * MB) - 64 * 1024; // just under the 20 MB limit

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

async function main() {
  const tdb = await createTestDatabase();
  const config = testConfig(tdb.url, { RATE_LIMIT_GENERATE_PER_MIN: '10000' });
  const storage = createStorage(config);
  const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS });
  const { app, close } = createApp({ config, db: tdb.db, storage, temporal: new Client({ connection }), logger: pino({ level: 'silent' }) });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/upload`;
  const tenant = await createTenant(tdb.db);
  const payload = fakeMp4(sizeBytes);

  // The client writes the multipart body by hand from the one shared payload buffer (no per-request
  // copies), so the RSS growth measured is the gateway's.
  const post = () =>
    new Promise<void>((resolve, reject) => {
      const boundary = `bench-${randomBytes(8).toString('hex')}`;
      const head = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="project_id"\r\n\r\n${tenant.projectId}\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.mp4"\r\nContent-Type: video/mp4\r\n\r\n`,
      );
      const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
      const req = http.request(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + payload.length + tail.length) },
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
  await post();
  global.gc?.();

  const rssBefore = process.memoryUsage().rss;
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  const started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: concurrency }, post));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);

  const total = payload.length * concurrency;
  console.log(`uploads:        ${concurrency} concurrent × ${mb(payload.length)} MB (video/mp4), gateway in-process, client writing one shared buffer`);
  console.log(`elapsed:        ${seconds.toFixed(2)} s`);
  console.log(`throughput:     ${(total / MB / seconds).toFixed(1)} MB/s (${mb(total)} MB stored)`);
  console.log(`RSS before:     ${mb(rssBefore)} MB`);
  console.log(`RSS peak:       ${mb(peak)} MB (growth ${mb(peak - rssBefore)} MB, ${mb((peak - rssBefore) / concurrency)} MB per upload)`);
  const after = process.memoryUsage();
  console.log(`RSS after:      ${mb(after.rss)} MB (heap used ${mb(after.heapUsed)} MB, external+buffers ${mb(after.external)} MB)`);

  const rows = await tdb.db.selectFrom('file_uploads').select('object_key').execute();
  for (const r of rows) await storage.remove(r.object_key);
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await close();
  await connection.close();
  await tdb.drop();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
