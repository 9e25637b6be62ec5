// Seeding: the actor/voice catalog (rows plus media rendered offline into object storage) and the
// demo workspace that `npm run dev` prints. Both are idempotent: rows are upserted by stable id,
// media objects that already exist are kept, and the demo workspace is reused across runs.
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Database } from '../db/index.js';
import type { Storage } from '../shared/storage.js';
import { renderImage, renderTalkingActor, renderVideo, runTool, synthesizeSpeech } from '../activities/providers/local/media.js';
import { seedActors, seedVoices, type SeedActor, type SeedVoice } from '../db/seed-data.js';
import { adjustCredits, createApiKey, createProject, createWorkspace, revokeApiKey } from '../db/repos/workspaces.js';

/** Object keys of a catalog entry's media (served publicly under /media/<key>). */
export const catalogKeys = {
  actorReference: (id: string) => `catalog/actors/${id}/reference.png`,
  actorPreview: (id: string) => `catalog/actors/${id}/preview.mp4`,
  actorThumbnail: (id: string) => `catalog/actors/${id}/thumbnail.jpg`,
  voicePreview: (id: string) => `catalog/voices/${id}/preview.wav`,
};

// Small on purpose: the seed runs on every `npm run dev` of a fresh machine.
const REFERENCE_SIZE = { width: 540, height: 720 };
const PREVIEW_SIZE = { width: 360, height: 640 };
const THUMBNAIL_HEIGHT = 320;
const SILENT_PREVIEW_SECONDS = 2;

interface SeedCatalogOptions {
  ffmpegPath?: string;
  espeakPath?: string;
  /** Actors rendered at once (each spawns ffmpeg / espeak-ng). */
  concurrency?: number;
  /** Re-render and overwrite media objects that already exist. */
  force?: boolean;
  log?: (message: string) => void;
}

interface SeedCatalogResult {
  voices: number;
  actors: number;
  mediaCreated: number;
  mediaSkipped: number;
}

/** Upserts every seed voice and actor, then renders and stores whatever media is missing. */
export async function seedCatalog(db: Database, storage: Storage, opts: SeedCatalogOptions = {}): Promise<SeedCatalogResult> {
  await db.transaction().execute(async (tx) => {
    for (const [i, v] of seedVoices.entries()) {
      const row = {
        name: v.name,
        gender: v.gender,
        language: v.language,
        accent: v.accent,
        preview_key: catalogKeys.voicePreview(v.id),
        tts_voice: v.ttsVoice,
        provider_voice_id: v.providerVoiceId,
        sort_key: i,
      };
      await tx
        .insertInto('voices')
        .values({ id: v.id, ...row })
        .onConflict((oc) => oc.column('id').doUpdateSet(row))
        .execute();
    }
    for (const [i, a] of seedActors.entries()) {
      const row = {
        name: a.name,
        age: a.age,
        gender: a.gender,
        skin_tone: a.skinTone,
        is_pro: a.isPro,
        default_voice_id: a.defaultVoiceId,
        reference_image_key: catalogKeys.actorReference(a.id),
        preview_video_key: catalogKeys.actorPreview(a.id),
        preview_thumbnail_key: catalogKeys.actorThumbnail(a.id),
        sort_key: i,
      };
      await tx
        .insertInto('actors')
        .values({ id: a.id, ...row })
        .onConflict((oc) => oc.column('id').doUpdateSet(row))
        .execute();
    }
  });

  const counts = { created: 0, skipped: 0 };
  const log = opts.log ?? (() => undefined);
  const work = await mkdtemp(join(tmpdir(), 'media-seed-'));
  try {
    const tasks: Array<() => Promise<void>> = [
      ...seedVoices.map((v) => () => seedVoiceMedia(v, storage, work, opts, counts)),
      ...seedActors.map((a) => () => seedActorMedia(a, storage, work, opts, counts)),
    ];
    await runLimited(tasks, opts.concurrency ?? 4);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  log(`catalog: ${seedVoices.length} voices, ${seedActors.length} actors, ${counts.created} media objects rendered, ${counts.skipped} kept`);
  return { voices: seedVoices.length, actors: seedActors.length, mediaCreated: counts.created, mediaSkipped: counts.skipped };
}

async function runLimited(tasks: Array<() => Promise<void>>, limit: number): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, tasks.length)) }, lane));
}

async function missing(storage: Storage, key: string, opts: SeedCatalogOptions): Promise<boolean> {
  return opts.force === true || (await storage.stat(key)) === null;
}

async function putFile(storage: Storage, key: string, path: string, contentType: string): Promise<void> {
  const { size } = await stat(path);
  await storage.putStream(key, createReadStream(path), contentType, size);
}

/** A voice's fallback for speaking actors without a default voice: one of the catalog, by gender. */
function previewVoiceFor(actor: SeedActor): SeedVoice {
  const byId = actor.defaultVoiceId ? seedVoices.find((v) => v.id === actor.defaultVoiceId) : undefined;
  return byId ?? seedVoices.find((v) => v.gender === actor.gender) ?? seedVoices[0]!;
}

async function seedVoiceMedia(v: SeedVoice, storage: Storage, work: string, opts: SeedCatalogOptions, counts: { created: number; skipped: number }) {
  const key = catalogKeys.voicePreview(v.id);
  if (!(await missing(storage, key, opts))) {
    counts.skipped++;
    return;
  }
  const out = join(work, `${v.id}.wav`);
  await synthesizeSpeech({ text: v.sample, ttsVoice: v.ttsVoice, speed: 1, outPath: out, ...(opts.espeakPath ? { espeakPath: opts.espeakPath } : {}) });
  await putFile(storage, key, out, 'audio/wav');
  counts.created++;
}

async function seedActorMedia(a: SeedActor, storage: Storage, work: string, opts: SeedCatalogOptions, counts: { created: number; skipped: number }) {
  const keys = { ref: catalogKeys.actorReference(a.id), preview: catalogKeys.actorPreview(a.id), thumb: catalogKeys.actorThumbnail(a.id) };
  const need = {
    ref: await missing(storage, keys.ref, opts),
    preview: await missing(storage, keys.preview, opts),
    thumb: await missing(storage, keys.thumb, opts),
  };
  counts.skipped += Object.values(need).filter((n) => !n).length;
  if (!need.ref && !need.preview && !need.thumb) return;

  const ffmpeg = opts.ffmpegPath ? { ffmpegPath: opts.ffmpegPath } : {};
  const dir = join(work, a.id);
  await mkdir(dir, { recursive: true });
  // The reference image is a pure function of the actor (prompt + seed), so re-rendering it for a
  // missing preview gives the same picture as the stored one.
  const refPath = join(dir, 'reference.png');
  const png = await renderImage({ prompt: `studio portrait of ${a.name}, ${a.look}`, ...REFERENCE_SIZE, seed: seedNumber(a.id), format: 'png', ...ffmpeg });
  await writeFile(refPath, png);
  if (need.ref) {
    await storage.putStream(keys.ref, png, 'image/png', png.length);
    counts.created++;
  }

  const previewPath = join(dir, 'preview.mp4');
  if (need.preview || need.thumb) {
    if (a.defaultVoiceId) {
      // Actors with a voice introduce themselves, in that voice.
      const audio = join(dir, 'intro.wav');
      const voice = previewVoiceFor(a);
      await synthesizeSpeech({
        text: `Hi, I'm ${a.name.split(' ')[0]}.`,
        ttsVoice: voice.ttsVoice,
        speed: 1.1,
        outPath: audio,
        ...(opts.espeakPath ? { espeakPath: opts.espeakPath } : {}),
      });
      await renderTalkingActor({ actorImage: refPath, audioPath: audio, ...PREVIEW_SIZE, outPath: previewPath, ...ffmpeg });
    } else {
      await renderVideo({ prompt: a.look, ...PREVIEW_SIZE, durationSeconds: SILENT_PREVIEW_SECONDS, startFrame: refPath, outPath: previewPath, ...ffmpeg });
    }
    if (need.preview) {
      await putFile(storage, keys.preview, previewPath, 'video/mp4');
      counts.created++;
    }
  }
  if (need.thumb) {
    const thumbPath = join(dir, 'thumbnail.jpg');
    // The thumbnail is the preview's first frame, so list views match what plays.
    await runTool(opts.ffmpegPath ?? 'ffmpeg', [
      '-hide_banner',
      '-loglevel',
      'error',
      '-y',
      '-i',
      previewPath,
      '-frames:v',
      '1',
      '-vf',
      `scale=-2:${THUMBNAIL_HEIGHT}`,
      '-q:v',
      '4',
      thumbPath,
    ]);
    await putFile(storage, keys.thumb, thumbPath, 'image/jpeg');
    counts.created++;
  }
}

/** A stable 31-bit seed from an id (FNV-1a). */
function seedNumber(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 1;
}

// ---------------------------------------------------------------- demo workspace

const DEMO_OWNER_EMAIL = 'demo@example.com';
const DEMO_WORKSPACE_NAME = 'Demo workspace';
const DEMO_PROJECT_NAME = 'Demo project';
const DEMO_KEY_NAME = 'demo (npm run dev)';
export const DEMO_CREDITS = 10_000;

export interface DemoSeed {
  workspaceId: string;
  projectId: string;
  ownerEmail: string;
  credits: number;
  apiKeyId: string;
  /** The full key: only its hash is stored, so every run mints a new one and revokes the old. */
  apiKey: string;
  created: boolean;
}

/**
 * The demo workspace (owner demo@example.com) with a project, at least DEMO_CREDITS credits and a
 * fresh API key. Reused across runs; earlier demo keys are revoked, since their secrets are gone.
 */
export async function seedDemo(db: Database, opts: { credits?: number } = {}): Promise<DemoSeed> {
  const target = opts.credits ?? DEMO_CREDITS;
  // Serialize concurrent dev starts on one database so they never create two demo workspaces.
  return db.connection().execute(async (conn) => {
    await sql`select pg_advisory_lock(hashtext('media-gen:seed-demo'))`.execute(conn);
    try {
      const existing = await conn
        .selectFrom('workspaces')
        .innerJoin('workspace_members', 'workspace_members.workspace_id', 'workspaces.id')
        .select(['workspaces.id', 'workspaces.credits'])
        .where('workspace_members.email', '=', DEMO_OWNER_EMAIL)
        .where('workspace_members.role', '=', 'owner')
        .where('workspaces.name', '=', DEMO_WORKSPACE_NAME)
        .orderBy('workspaces.created_at')
        .executeTakeFirst();
      let workspaceId: string;
      let credits: number;
      if (existing) {
        workspaceId = existing.id;
        credits = existing.credits;
        if (credits < target) {
          credits = (await adjustCredits(conn, workspaceId, target - credits, 'demo top-up (npm run dev)')).credits;
        }
      } else {
        workspaceId = (await createWorkspace(conn, { name: DEMO_WORKSPACE_NAME, ownerEmail: DEMO_OWNER_EMAIL, credits: target })).id;
        credits = target;
      }

      const project =
        (await conn
          .selectFrom('projects')
          .select('id')
          .where('workspace_id', '=', workspaceId)
          .where('name', '=', DEMO_PROJECT_NAME)
          .orderBy('created_at')
          .executeTakeFirst()) ?? (await createProject(conn, workspaceId, DEMO_PROJECT_NAME));

      const stale = await conn
        .selectFrom('api_keys')
        .select('id')
        .where('workspace_id', '=', workspaceId)
        .where('name', '=', DEMO_KEY_NAME)
        .where('revoked_at', 'is', null)
        .execute();
      for (const k of stale) await revokeApiKey(conn, { workspaceId, keyId: k.id, actorEmail: DEMO_OWNER_EMAIL });
      const key = await createApiKey(conn, { workspaceId, name: DEMO_KEY_NAME, actorEmail: DEMO_OWNER_EMAIL });

      return { workspaceId, projectId: project.id, ownerEmail: DEMO_OWNER_EMAIL, credits, apiKeyId: key.id, apiKey: key.key, created: !existing };
    } finally {
      await sql`select pg_advisory_unlock(hashtext('media-gen:seed-demo'))`.execute(conn);
    }
  });
}
