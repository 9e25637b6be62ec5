// A loopback-only HTTPS server for fetch tests, with a self-signed certificate made at test time by
// openssl in a temporary directory and trusted only by the code under test (via `ca` or
// FETCH_EXTRA_CA_FILE). Routes are registered per test; connections are counted.
import https from 'node:https';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';

const run = promisify(execFile);

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface HttpsTestServer {
  /** e.g. https://127.0.0.1:43121 */
  origin: string;
  port: number;
  /** PEM of the self-signed certificate (its own CA). */
  ca: Buffer;
  /** Path of that PEM, for FETCH_EXTRA_CA_FILE. */
  caFile: string;
  /** TLS connections accepted so far. */
  connections(): number;
  /** Paths requested so far, in order. */
  requests: string[];
  route(path: string, handler: Handler): void;
  /** Serves `body` at `path` with the given Content-Type (default application/octet-stream). */
  file(path: string, body: Buffer, contentType?: string): void;
  /** Answers every path no route names (default: 404). */
  fallback(handler: Handler): void;
  close(): Promise<void>;
}

export async function startHttpsTestServer(): Promise<HttpsTestServer> {
  const dir = await mkdtemp(join(tmpdir(), 'https-test-'));
  const keyFile = join(dir, 'key.pem');
  const caFile = join(dir, 'cert.pem');
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-sha256',
    '-days',
    '1',
    '-keyout',
    keyFile,
    '-out',
    caFile,
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
  ]);
  const [key, cert] = await Promise.all([readFile(keyFile), readFile(caFile)]);

  const routes = new Map<string, Handler>();
  let fallback: Handler | undefined;
  const requests: string[] = [];
  let connections = 0;
  const server = https.createServer({ key, cert }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    requests.push(req.url ?? '/');
    const handler = routes.get(path) ?? fallback;
    if (!handler) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    handler(req, res);
  });
  server.on('secureConnection', () => connections++);
  // Tests cut slow bodies; a reset socket must not crash the test process.
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    origin: `https://127.0.0.1:${port}`,
    port,
    ca: cert,
    caFile,
    connections: () => connections,
    requests,
    route: (path, handler) => routes.set(path, handler),
    fallback: (handler) => (fallback = handler),
    file(path, body, contentType = 'application/octet-stream') {
      routes.set(path, (_req, res) => {
        res.writeHead(200, { 'content-type': contentType, 'content-length': String(body.length) });
        res.end(body);
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface SampleMedia {
  'image/jpeg': Buffer;
  'image/png': Buffer;
  'image/webp': Buffer;
  'video/mp4': Buffer;
  'video/quicktime': Buffer;
  'video/webm': Buffer;
  /** Not accepted: Matroska video and a GIF image. */
  mkv: Buffer;
  gif: Buffer;
}

/** Small real media files rendered by ffmpeg at test time (served by the test server, uploaded by tests). */
export async function makeSampleMedia(ffmpeg = process.env.FFMPEG_PATH ?? 'ffmpeg'): Promise<SampleMedia> {
  const dir = await mkdtemp(join(tmpdir(), 'media-samples-'));
  try {
    const still = ['-f', 'lavfi', '-i', 'color=c=red:s=32x32', '-frames:v', '1'];
    const clip = ['-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-t', '1'];
    const jobs: Array<[keyof SampleMedia, string, string[]]> = [
      ['image/jpeg', 'a.jpg', still],
      ['image/png', 'a.png', still],
      ['image/webp', 'a.webp', [...still, '-c:v', 'libwebp']],
      ['gif', 'a.gif', still],
      ['video/mp4', 'a.mp4', [...clip, '-c:v', 'libx264', '-pix_fmt', 'yuv420p']],
      ['video/quicktime', 'a.mov', [...clip, '-c:v', 'libx264', '-pix_fmt', 'yuv420p']],
      ['video/webm', 'a.webm', [...clip, '-c:v', 'libvpx']],
      ['mkv', 'a.mkv', [...clip, '-c:v', 'libx264', '-pix_fmt', 'yuv420p']],
    ];
    const out = {} as SampleMedia;
    await Promise.all(
      jobs.map(async ([name, file, args]) => {
        await run(ffmpeg, ['-y', '-loglevel', 'error', ...args, join(dir, file)]);
        out[name] = await readFile(join(dir, file));
      }),
    );
    return out;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
