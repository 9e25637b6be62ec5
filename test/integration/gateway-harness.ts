// Shared by the gateway-*.test.ts suites: a real gateway on the real stack, either in this process
// (the gateway service on an ephemeral loopback port) or as separate `node dist/api/server.js` processes.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import express from 'express';
import type { Storage } from '../../shared/storage.js';
import { createMediaRouter } from '../../api/routes/media.js';
import { errorMiddleware, notFoundRoute } from '../../api/errors.js';
import type { Config } from '../../shared/config.js';
import type { Database } from '../../db/index.js';
import { testConfig } from '../support/stack.js';
import { startGateway, type Gateway, type InProcessGateway } from '../support/services.js';

export type { Gateway, InProcessGateway } from '../support/services.js';

/** The gateway service in this process, listening on 127.0.0.1 with an ephemeral port (its own lazy Temporal client). */
export async function startInProcessGateway(db: Database, databaseUrl: string, env: Record<string, string> = {}): Promise<InProcessGateway> {
  return startGateway(testConfig(databaseUrl, { HOST: '127.0.0.1', ...env }), db);
}

const serverEntry = fileURLToPath(new URL('../../api/server.js', import.meta.url));

/** A separate gateway process (`node dist/api/server.js`); resolves once it logged its address. */
export async function spawnGateway(databaseUrl: string, env: Record<string, string> = {}): Promise<Gateway & { child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, [serverEntry], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: databaseUrl,
      HOST: '127.0.0.1',
      PORT: '0',
      API_METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const lines = createInterface({ input: child.stdout! });
  let stdout = '';
  lines.on('line', (line) => (stdout += `${line}\n`));
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start within 30 s: ${stderr}`)), 30_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code} before listening: ${stderr}`));
    });
    lines.on('line', (line) => {
      try {
        const msg = (JSON.parse(line) as { msg?: string }).msg ?? '';
        const m = /^listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(msg);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      } catch {
        // not a JSON log line
      }
    });
  });
  return {
    child,
    baseUrl,
    output: () => stdout + stderr,
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The public /media route alone (with the gateway's 404 and error handling) on a loopback port. */
export async function serveMediaRoute(storage: Storage, config: Config, db: Database): Promise<{ server: Server; base: string }> {
  const app = express();
  app.use(createMediaRouter({ storage, config, db }));
  app.use(notFoundRoute);
  app.use(errorMiddleware(pino({ level: 'silent' })));
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export interface HttpAnswer {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** One request against a loopback gateway (refuses any other host, whatever the caller passes). */
export async function call(
  baseUrl: string,
  method: string,
  path: string,
  opts: { key?: string; authorization?: string; body?: string; contentType?: string } = {},
): Promise<HttpAnswer> {
  const url = new URL(path, baseUrl);
  if (url.hostname !== '127.0.0.1') throw new Error(`refusing to send a test request to ${url.hostname}`);
  const headers: Record<string, string> = {};
  if (opts.authorization !== undefined) headers.authorization = opts.authorization;
  else if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.contentType) headers['content-type'] = opts.contentType;
  const res = await fetch(url, { method, headers, body: opts.body });
  const text = await res.text();
  let body: any = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, body, text };
}

/** Inserts catalog rows directly (the seed may not exist yet): `n` voices and `n` actors. */
export async function insertCatalog(db: Database, n: number, prefix = 'tst'): Promise<{ actorIds: string[]; voiceIds: string[] }> {
  const genders = ['female', 'male', 'non_binary'] as const;
  const ages = ['young_adult', 'adult', 'middle_aged', 'senior'] as const;
  const tones = ['light', 'medium_light', 'medium', 'medium_dark', 'dark'] as const;
  const voiceIds: string[] = [];
  const actorIds: string[] = [];
  for (let i = 0; i < n; i++) {
    const vid = `${prefix}_voice_${String(i).padStart(3, '0')}`;
    voiceIds.push(vid);
    await db
      .insertInto('voices')
      .values({
        id: vid,
        name: `Voice ${i}`,
        gender: genders[i % 3]!,
        language: 'en',
        accent: i % 2 ? 'british' : 'american',
        preview_key: `catalog/voices/${vid}.mp3`,
        tts_voice: 'en-us',
        provider_voice_id: null,
        // Two rows share every sort key, so the id tiebreak is exercised.
        sort_key: Math.floor(i / 2),
      })
      .execute();
  }
  for (let i = 0; i < n; i++) {
    const aid = `${prefix}_actor_${String(i).padStart(3, '0')}`;
    actorIds.push(aid);
    await db
      .insertInto('actors')
      .values({
        id: aid,
        name: `Actor ${i}`,
        age: ages[i % 4]!,
        gender: genders[i % 3]!,
        skin_tone: tones[i % 5]!,
        is_pro: i % 2 === 0,
        default_voice_id: i % 4 === 3 ? null : voiceIds[i]!,
        reference_image_key: `catalog/actors/${aid}/reference.png`,
        preview_video_key: `catalog/actors/${aid}/preview.mp4`,
        preview_thumbnail_key: `catalog/actors/${aid}/thumbnail.jpg`,
        sort_key: Math.floor(i / 2),
      })
      .execute();
  }
  return { actorIds, voiceIds };
}
