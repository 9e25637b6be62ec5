// Test fixtures made of real media: an actor with a reference image in storage and voices, and
// completed file uploads (objects in MinIO plus their rows).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from '../../db/index.js';
import { jobPrefix, type Storage } from '../../shared/storage.js';
import type { Config } from '../../shared/config.js';
import { rawMinioClient } from './stack.js';
import { newId } from '../../shared/ids.js';
import { renderImage, renderVideo, probeMedia, type MediaInfo } from '../../activities/providers/local/media.js';

/** A voice of the catalog; `providerVoiceId`: the live speech provider's voice (a fake ElevenLabs' `voices`), else local only. */
export async function insertVoice(db: Database, opts: { id?: string; ttsVoice?: string; providerVoiceId?: string } = {}) {
  const id = opts.id ?? newId('voice');
  await db
    .insertInto('voices')
    .values({
      id,
      name: 'Test voice',
      gender: 'female',
      language: 'en',
      accent: 'american',
      preview_key: `catalog/voices/${id}/preview.wav`,
      tts_voice: opts.ttsVoice ?? 'en-us+f3',
      provider_voice_id: opts.providerVoiceId ?? null,
      sort_key: 1,
    })
    .execute();
  return id;
}

export async function insertActor(db: Database, storage: Storage, opts: { defaultVoiceId?: string | null } = {}) {
  const id = newId('actor');
  const key = `catalog/actors/${id}/reference.png`;
  await storage.putStream(key, await renderImage({ prompt: `portrait of ${id}`, width: 512, height: 512 }), 'image/png');
  await db
    .insertInto('actors')
    .values({
      id,
      name: 'Test actor',
      age: 'adult',
      gender: 'female',
      skin_tone: 'medium',
      is_pro: false,
      default_voice_id: opts.defaultVoiceId ?? null,
      reference_image_key: key,
      preview_video_key: `catalog/actors/${id}/preview.mp4`,
      preview_thumbnail_key: `catalog/actors/${id}/thumbnail.jpg`,
      sort_key: 1,
    })
    .execute();
  return id;
}

/** A completed upload row whose object really exists (an image, or a short video). */
export async function insertUpload(db: Database, storage: Storage, t: { workspaceId: string; projectId: string }, type: 'image' | 'video') {
  const id = newId('file');
  const key = `uploads/${t.workspaceId}/${id}/${type === 'image' ? 'input.png' : 'input.mp4'}`;
  let size: number;
  if (type === 'image') {
    const png = await renderImage({ prompt: `upload ${id}`, width: 320, height: 320 });
    size = (await storage.putStream(key, png, 'image/png')).size;
  } else {
    const dir = await mkdtemp(join(tmpdir(), 'fixture-'));
    try {
      const out = join(dir, 'v.mp4');
      await renderVideo({ prompt: `motion ${id}`, width: 320, height: 568, durationSeconds: 2, outPath: out });
      size = (await storage.putStream(key, await readFile(out), 'video/mp4')).size;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  await insertUploadRow(db, t, { id, key, type, size });
  return id;
}

/** The completed upload row of an object already stored at `key` (`uploads/<workspace>/<id>/<name>`), so /media serves it. */
export async function insertUploadRow(
  db: Database,
  t: { workspaceId: string; projectId: string },
  u: { id: string; key: string; type: 'image' | 'video'; size: number; expiresAt?: Date | null },
): Promise<void> {
  await db
    .insertInto('file_uploads')
    .values({
      id: u.id,
      workspace_id: t.workspaceId,
      project_id: t.projectId,
      name: u.key.split('/').pop()!,
      object_key: u.key,
      file_type: u.type,
      mime_type: u.type === 'image' ? 'image/png' : 'video/mp4',
      file_size: u.size,
      status: 'completed',
      source_url: null,
      expires_at: u.expiresAt ?? null,
    })
    .execute();
}

/** Downloads a URL and probes it with ffprobe. */
export async function probeUrl(url: string): Promise<MediaInfo & { contentType: string | null; bytes: Buffer }> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url} → ${res.status}`);
  const bytes = Buffer.from(await res.arrayBuffer());
  const dir = await mkdtemp(join(tmpdir(), 'probe-'));
  try {
    const file = join(dir, 'media');
    await import('node:fs/promises').then((fs) => fs.writeFile(file, bytes));
    const info = await probeMedia(file);
    return { ...info, contentType: res.headers.get('content-type'), bytes };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Every object key stored for a job (outputs, fetched inputs, intermediate files), read from the bucket. */
export async function jobObjectKeys(config: Config, jobId: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of rawMinioClient(config).listObjectsV2(config.S3_BUCKET, jobPrefix(jobId), true) as AsyncIterable<{ name?: string }>) {
    if (o.name) keys.push(o.name);
  }
  return keys;
}
