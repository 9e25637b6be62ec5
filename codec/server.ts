// The codec server process (`node dist/codec/server.js`): decodes and encodes payloads for the
// Temporal Web UI and the `temporal` CLI with the same keys as the gateway and workers
// (codec/http.ts has the protocol and who may call it; docs/operations/temporal-ui.md the use).
// It needs no database and no Temporal connection: only the keys, its token and the UI's origin.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { pino, type Logger } from 'pino';
import { codecEnv } from '../shared/config/codec.js';
import { coreEnv } from '../shared/config/core.js';
import { gatewayEnv } from '../shared/config/gateway.js';
import { payloadCodecFrom } from './payload-codec.js';
import { codecRequestHandler } from './http.js';

const settingsSchema = z.object({
  ...codecEnv,
  HOST: gatewayEnv.HOST,
  LOG_LEVEL: coreEnv.LOG_LEVEL,
  TEMPORAL_NAMESPACE: coreEnv.TEMPORAL_NAMESPACE,
});

class CodecServerConfigError extends Error {
  override name = 'CodecServerConfigError';
}

export interface CodecServer {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** Validates the settings (keys, token, origins) and listens; every problem names its variable, never a value. */
export async function startCodecServer(env: NodeJS.ProcessEnv, logger?: Logger): Promise<CodecServer> {
  const parsed = settingsSchema.safeParse(env);
  if (!parsed.success) throw new CodecServerConfigError(`invalid configuration: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}`);
  const s = parsed.data;
  const codec = payloadCodecFrom(s);
  if (!codec) throw new CodecServerConfigError('the codec server needs PAYLOAD_CODEC_KEYS (or PAYLOAD_CODEC_KEYS_FILE) and PAYLOAD_CODEC_KEY_ID');
  let token = s.CODEC_SERVER_TOKEN;
  if (s.CODEC_SERVER_TOKEN_FILE) {
    try {
      token = readFileSync(s.CODEC_SERVER_TOKEN_FILE, 'utf8').trim();
    } catch {
      throw new CodecServerConfigError('CODEC_SERVER_TOKEN_FILE: cannot read the file');
    }
  }
  if (!token || token.length < 32) throw new CodecServerConfigError('CODEC_SERVER_TOKEN (or CODEC_SERVER_TOKEN_FILE) must hold at least 32 characters');
  const origins = (s.CODEC_SERVER_CORS_ORIGINS ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  for (const o of origins) {
    let u: URL | null = null;
    try {
      u = new URL(o);
    } catch {
      u = null;
    }
    if (!u || u.origin !== o)
      throw new CodecServerConfigError('CODEC_SERVER_CORS_ORIGINS: every entry is an origin such as http://127.0.0.1:8080 (no path, no trailing slash)');
  }
  const log = logger ?? pino({ level: s.LOG_LEVEL, base: { service: 'codec-server' } });
  const server = createServer(codecRequestHandler({ codec, token, origins, namespace: s.TEMPORAL_NAMESPACE, logger: log }));
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(s.CODEC_SERVER_PORT, s.HOST, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = s.HOST.includes(':') ? `[${s.HOST}]` : s.HOST;
  const url = `http://${host}:${port}`;
  log.info({ url, activeKeyId: codec.activeKeyId, origins }, 'codec server listening');
  return {
    server,
    url,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  startCodecServer(process.env).then(
    (s) => {
      const stop = () => void s.close().then(() => process.exit(0));
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    },
    (err: Error) => {
      process.stderr.write(`codec server: ${err.message}\n`);
      process.exit(1);
    },
  );
}
