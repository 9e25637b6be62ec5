// Shared pieces of the provider contract tests: real MinIO storage from the stack's S3_* variables,
// a ProviderContext over it, requests built from the catalog's defaults, and a poll loop.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderVideo } from '../../../activities/providers/local/media.js';
import { createStorage, type Storage } from '../../../shared/storage.js';
import { routeFor } from '../../../shared/catalog.js';
import type { InputFile, PollResult, ProviderAdapter, ProviderContext, ProviderRef, ProviderRequest } from '../../../activities/providers/types.js';
import { tinyPng } from './server.js';

export function stackStorage(): Storage {
  for (const v of ['S3_ENDPOINT', 'S3_ACCESS_KEY', 'S3_SECRET_KEY']) {
    if (!process.env[v]) throw new Error(`${v} is not set: run the tests with \`npm test\`, which starts the stack`);
  }
  return createStorage({
    S3_ENDPOINT: process.env.S3_ENDPOINT!,
    S3_ACCESS_KEY: process.env.S3_ACCESS_KEY!,
    S3_SECRET_KEY: process.env.S3_SECRET_KEY!,
    S3_BUCKET: process.env.S3_BUCKET ?? 'media',
    S3_REGION: process.env.S3_REGION ?? 'us-east-1',
    S3_PUBLIC_BASE_URL: undefined,
    PRESIGN_EXPIRY_SECONDS: 3600,
  });
}

export interface TestContext extends ProviderContext {
  heartbeats: unknown[];
  abort: AbortController;
}

export function providerContext(storage: Storage): TestContext {
  const abort = new AbortController();
  const heartbeats: unknown[] = [];
  return {
    storage,
    inputUrl: (key) => storage.url(key, 600),
    heartbeat: (d) => void heartbeats.push(d),
    signal: abort.signal,
    attempt: 1,
    heartbeats,
    abort,
  };
}

/** Stores a small input file in MinIO, as the fetch-inputs activity would have. */
export async function storeInput(storage: Storage, role: InputFile['role'], contentType = role === 'video' ? 'video/mp4' : 'image/png'): Promise<InputFile> {
  const key = `test-inputs/${randomUUID()}/${role}${contentType === 'video/mp4' ? '.mp4' : '.png'}`;
  await storage.putStream(key, tinyPng, contentType, tinyPng.length);
  return { role, key, contentType };
}

/** A real 4 s portrait (320×568) motion video rendered locally and stored as a video input, for adapters that conform it. */
export async function storeMotionVideo(storage: Storage): Promise<InputFile> {
  const dir = await mkdtemp(join(tmpdir(), 'motion-'));
  let motion: Buffer;
  try {
    await renderVideo({ prompt: 'motion', width: 320, height: 568, durationSeconds: 4, outPath: join(dir, 'm.mp4') });
    motion = await readFile(join(dir, 'm.mp4'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const video = await storeInput(storage, 'video');
  await storage.putStream(video.key, motion, 'video/mp4', motion.length);
  return video;
}

export const testVoice = { id: 'voice_rachel', ttsVoice: 'en-us', providerVoiceId: '21m00Tcm4TlvDq8ikWAM', gender: 'female' };

/** A request for `model` with the catalog's defaults, overridable field by field. */
export function requestFor(model: string, over: Partial<ProviderRequest> = {}): ProviderRequest {
  const route = routeFor(model);
  if (!route) throw new Error(`no catalog entry for ${model}`);
  return {
    jobId: `job_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
    kind: route.kind,
    model,
    route,
    prompt: 'A lighthouse on a cliff at dawn, waves below',
    aspectRatio: route.defaultAspectRatio,
    count: route.kind === 'image' ? 1 : undefined,
    duration: route.defaultDuration,
    resolution: route.defaultResolution,
    inputs: [],
    ...over,
  };
}

/** Polls until the provider reports a final state; returns every answer seen. */
export async function pollToEnd(adapter: ProviderAdapter, ref: ProviderRef, ctx: ProviderContext, maxPolls = 20): Promise<PollResult[]> {
  const seen: PollResult[] = [];
  for (let i = 0; i < maxPolls; i++) {
    const r = await adapter.poll(ref, ctx);
    seen.push(r);
    if (r.state === 'succeeded' || r.state === 'failed') return seen;
  }
  throw new Error(`no final state after ${maxPolls} polls: ${JSON.stringify(seen.at(-1))}`);
}

/** Runs `fn` and returns the error it throws (failing when it does not throw). */
export async function errorOf(fn: () => Promise<unknown>): Promise<Error & { retryable?: boolean; retryAfterMs?: number; status?: number }> {
  try {
    await fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected an error, got none');
}
