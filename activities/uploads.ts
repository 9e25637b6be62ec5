// Upload activities: fetch a remote URL safely (shared/fetch-remote.ts), decide its type from
// the bytes (shared/media/type.ts), stream it into object storage under its size cap, and
// record it. Also the job-input fetch used by the generation workflow for `*_url` inputs.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { pipeline, Transform } from 'node:stream';
import { ApplicationFailure } from '@temporalio/common';
import type { Database } from '../db/index.js';
import type { Config } from '../shared/config.js';
import type { Storage } from '../shared/storage.js';
import { findUploadById, insertUploadWithinQuota, storedUploadOf } from '../db/repos/uploads.js';
import { claimSlot, fetchSlots, releaseSlot } from '../db/repos/leased-slots.js';
import { quotaExceededMessage, sanitizeFileName, uploadFailureTypes, uploadLimits, uploadObjectKey, type StoredUpload } from '../shared/uploads.js';
import { fetchRemote, FetchError, type FetchRemoteOptions } from '../shared/fetch-remote.js';
import { createMediaGuard, MB, MediaError, type MediaKind, type MediaType } from '../shared/media/type.js';
import { failureTypes } from '../shared/failure-types.js';
import type { UploadFetchActivities, UploadFromUrlInput } from '../workflows/upload-from-url.js';

/** Test seams of the fetcher (resolver, connector); production leaves them unset. */
export type FetchHooks = Pick<FetchRemoteOptions, 'resolver' | 'connect'>;

type FetchConfig = Pick<
  Config,
  | 'FETCH_CONNECT_TIMEOUT_MS'
  | 'FETCH_TOTAL_TIMEOUT_MS'
  | 'FETCH_ALLOW_LOOPBACK_ORIGIN'
  | 'FETCH_EXTRA_CA_FILE'
  | 'FETCH_MIN_BYTES_PER_SECOND'
  | 'UPLOAD_MAX_IMAGE_PIXELS'
>;

/** Per-workspace slots of the fleet's remote fetches in flight. */
interface WorkspaceFetchSlots {
  /** A release function (resolved once the slot is free; a second call frees nothing), or null when the workspace already holds its share. */
  tryAcquire(workspaceId: string): Promise<(() => Promise<void>) | null>;
}

/**
 * At most `perWorkspace` concurrent fetches of one workspace across every fetch worker: a tenant
 * pointing many jobs at a slow server cannot take every fetch slot of the fleet. A slot is a leased
 * row in Postgres (db/repos/leased-slots.ts, fetch_slots) held for as long as a fetch may last
 * (`leaseMs`: its total timeout and a margin, so it needs no refresh) and deleted when the fetch
 * ends; a worker that dies frees its slots when their leases run out. A refused fetch fails as
 * transient (FetchUnavailable), so Temporal retries it with backoff instead of it waiting in a slot.
 */
export function createWorkspaceFetchSlots(db: Database, perWorkspace: number, leaseMs: number): WorkspaceFetchSlots {
  return {
    async tryAcquire(workspaceId) {
      const holder = randomUUID();
      const slot = await claimSlot(db, fetchSlots, workspaceId, perWorkspace, holder, leaseMs);
      if (slot === null) return null;
      let released: Promise<void> | null = null;
      // A failed delete leaves the row to its lease.
      return () => (released ??= releaseSlot(db, fetchSlots, workspaceId, slot, holder).catch(() => undefined));
    },
  };
}

/** How long a fetch slot is leased: the longest a fetch may run, and a margin for storing its bytes. */
export const fetchSlotLeaseMs = (config: Pick<Config, 'FETCH_TOTAL_TIMEOUT_MS'>) => config.FETCH_TOTAL_TIMEOUT_MS + 60_000;

const caCache = new Map<string, Buffer>();
function extraCa(path: string | undefined): Buffer | undefined {
  if (!path) return undefined;
  let ca = caCache.get(path);
  if (!ca) {
    ca = readFileSync(path);
    caCache.set(path, ca);
  }
  return ca;
}

// Loaded on first use: the gateway imports this module for its helpers and needs no activity code.
async function cancellationSignal(): Promise<AbortSignal | undefined> {
  const { Context } = await import('@temporalio/activity');
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined; // called outside an activity (tests, scripts)
  }
}

interface StoredRemote {
  key: string;
  type: MediaType;
  size: number;
  finalUrl: string;
}

/**
 * Fetches `url` safely and streams it into storage at `keyFor(type)`, enforcing the per-kind
 * `limits` while streaming. On any failure nothing is left in storage.
 */
export async function storeRemoteFile(
  deps: { storage: Storage; config: FetchConfig; fetchHooks?: FetchHooks; fetchSlots?: WorkspaceFetchSlots },
  url: string,
  limits: Partial<Record<MediaKind, number>>,
  keyFor: (type: MediaType) => string,
  workspaceId: string | null,
  more: { fetch?: Pick<FetchRemoteOptions, 'headers' | 'allowHost' | 'totalTimeoutMs'>; onProgress?: (bytes: number) => void } = {},
): Promise<StoredRemote> {
  const { config } = deps;
  // Provider outputs (no workspace) are not slotted: they are the provider's CDN, not a tenant's server.
  const release = deps.fetchSlots && workspaceId !== null ? await deps.fetchSlots.tryAcquire(workspaceId) : async () => undefined;
  if (!release) throw new FetchError('unavailable', 'too many remote fetches of this workspace in progress; retrying later');
  try {
    const maxBytes = Math.max(...Object.values(limits).filter((v): v is number => v !== undefined));
    const remote = await fetchRemote(url, {
      maxBytes,
      connectTimeoutMs: config.FETCH_CONNECT_TIMEOUT_MS,
      totalTimeoutMs: config.FETCH_TOTAL_TIMEOUT_MS,
      minBytesPerSecond: config.FETCH_MIN_BYTES_PER_SECOND,
      allowLoopbackOrigin: config.FETCH_ALLOW_LOOPBACK_ORIGIN,
      ca: extraCa(config.FETCH_EXTRA_CA_FILE),
      signal: await cancellationSignal(),
      accept: Object.keys(limits)
        .map((k) => `${k}/*`)
        .join(','),
      ...more.fetch,
      ...deps.fetchHooks,
    });
    // The remote Content-Type is only a hint: the bytes decide, so it is not passed as a declaration.
    const guard = createMediaGuard({ limits, maxPixels: config.UPLOAD_MAX_IMAGE_PIXELS });
    const onProgress = more.onProgress;
    if (onProgress) {
      // Counts bytes as they stream (long provider videos heartbeat their progress).
      let seen = 0;
      const counter = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          seen += chunk.length;
          onProgress(seen);
          cb(null, chunk);
        },
      });
      pipeline(remote.stream, counter, guard, () => undefined);
    } else {
      pipeline(remote.stream, guard, () => undefined);
    }
    const type = await guard.detected;
    const key = keyFor(type);
    await deps.storage.putStream(key, guard, type.mime);
    return { key, type, size: guard.bytes, finalUrl: remote.finalUrl };
  } finally {
    await release();
  }
}

/** Maps fetch and media failures to ApplicationFailures; `finalType` replaces every final type (job inputs). */
export function toApplicationFailure(err: unknown, finalType?: string): unknown {
  const fail = (type: string, message: string) => ApplicationFailure.create({ type: finalType ?? type, message, nonRetryable: true });
  if (err instanceof FetchError) {
    switch (err.kind) {
      case 'refused':
        return fail(uploadFailureTypes.urlRefused, `URL refused: ${err.message}`);
      case 'too_large':
        return fail(uploadFailureTypes.tooLarge, `file too large: ${err.message}`);
      case 'failed':
        return fail(uploadFailureTypes.fetchFailed, `could not fetch the URL: ${err.message}`);
      case 'unavailable':
        return ApplicationFailure.create({
          type: uploadFailureTypes.fetchUnavailable,
          message: `could not fetch the URL: ${err.message}`,
          nonRetryable: false,
        });
    }
  }
  if (err instanceof MediaError) {
    if (err.kind === 'too_large') return fail(uploadFailureTypes.tooLarge, `file too large: ${err.message}`);
    return fail(uploadFailureTypes.unsupportedType, err.message);
  }
  return err;
}

export function createUploadActivities(deps: { db: Database; storage: Storage; config: Config; fetchHooks?: FetchHooks; fetchSlots?: WorkspaceFetchSlots }) {
  const activities = {
    /** Fetches input.url into storage and records the completed upload; idempotent per upload id. */
    async fetchRemoteUpload(input: UploadFromUrlInput): Promise<StoredUpload> {
      const existing = await findUploadById(deps.db, input.uploadId);
      if (existing) return storedUploadOf(existing); // a retry after the row was written
      let stored: StoredRemote;
      try {
        stored = await storeRemoteFile(
          deps,
          input.url,
          uploadLimits.remote,
          (t) => uploadObjectKey(input.workspaceId, input.uploadId, t.ext),
          input.workspaceId,
        );
      } catch (err) {
        throw toApplicationFailure(err);
      }
      try {
        const name = sanitizeFileName(safeDecode(new URL(stored.finalUrl).pathname.split('/').pop()), stored.type);
        const inserted = await insertUploadWithinQuota(
          deps.db,
          {
            id: input.uploadId,
            workspace_id: input.workspaceId,
            project_id: input.projectId,
            name,
            object_key: stored.key,
            file_type: stored.type.fileType,
            mime_type: stored.type.mime,
            file_size: stored.size,
            status: 'completed',
            source_url: input.url,
            expires_at: new Date(Date.now() + (input.retentionSeconds ?? deps.config.UPLOAD_RETENTION_SECONDS) * 1000),
            retention_seconds: input.retentionSeconds ?? null,
          },
          deps.config.WORKSPACE_UPLOAD_QUOTA_MB * MB,
        );
        if ('row' in inserted) return storedUploadOf(inserted.row);
        throw ApplicationFailure.create({
          type: uploadFailureTypes.quotaExceeded,
          message: quotaExceededMessage(deps.config.WORKSPACE_UPLOAD_QUOTA_MB, inserted.usedBytes, stored.size),
          nonRetryable: true,
        });
      } catch (err) {
        await deps.storage.remove(stored.key).catch(() => undefined);
        throw err;
      }
    },
  } satisfies UploadFetchActivities;
  return activities;
}

function safeDecode(s: string | undefined): string | undefined {
  if (s === undefined) return undefined;
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * For the job pipeline: stores a remote URL's bytes at `jobs/<jobId>/<token>/input-<role>.<ext>` with the
 * same safe fetcher and limits (10 MB images, 50 MB videos). Final failures are ApplicationFailures
 * of type InputUnavailable (non-retryable) naming the reason; transient ones are FetchUnavailable.
 */
export async function fetchRemoteInput(
  deps: { storage: Storage; config: Config; fetchHooks?: FetchHooks; fetchSlots?: WorkspaceFetchSlots },
  input: { url: string; jobId: string; workspaceId: string; role: string; expect: MediaKind },
): Promise<{ key: string; contentType: string; size: number }> {
  if (!/^[a-z0-9_-]{1,40}$/i.test(input.role)) throw new Error(`invalid input role ${input.role}`);
  const limits = { [input.expect]: uploadLimits.remote[input.expect] } as Partial<Record<MediaKind, number>>;
  try {
    const stored = await storeRemoteFile(
      deps,
      input.url,
      limits,
      (t) => `${deps.storage.jobMediaPrefix(input.jobId)}/input-${input.role}.${t.ext}`,
      input.workspaceId,
    );
    return { key: stored.key, contentType: stored.type.mime, size: stored.size };
  } catch (err) {
    throw toApplicationFailure(err, failureTypes.inputUnavailable);
  }
}
