// The background video a job's output is composited over (a talking actor's: kinds/
// `inputs` entries of role `background`), found again when its outputs are stored: the upload it
// names, or the file its URL was fetched into when the job started.
import type { Job } from '../../db/schema.js';
import type { Database } from '../../db/index.js';
import { findUploadForJob } from '../../db/repos/uploads.js';
import { frameSize, type ModelRoute } from '../../shared/catalog.js';
import { failureTypes } from '../../shared/failure-types.js';
import { kindOf } from '../../kinds/index.js';
import type { Storage } from '../../shared/storage.js';
import { nonRetryable } from './common.js';

/** Whether a kind's jobs may carry a background (so only those read their job for it). */
export const takesBackground = (route: Pick<ModelRoute, 'kind'>): boolean =>
  Object.values(kindOf(route.kind).inputs ?? {}).some((i) => i.role === 'background');

/** The stored background of a job and the frame its output fills, or undefined when the job has none. */
export async function backgroundOf(
  db: Database,
  storage: Storage,
  job: Pick<Job, 'id' | 'kind' | 'workspace_id' | 'params'>,
  route: ModelRoute,
): Promise<{ key: string; frame: { width: number; height: number } } | undefined> {
  const params = job.params as unknown as Record<string, unknown>;
  const frame = frameSize(
    (params.aspect_ratio as string | undefined) ?? route.defaultAspectRatio,
    (params.resolution as string | undefined) ?? route.defaultResolution ?? '720p',
  );
  for (const [name, input] of Object.entries(kindOf(job.kind).inputs ?? {})) {
    const value = params[name];
    if (input.role !== 'background' || typeof value !== 'string' || value === '') continue;
    if (input.from === 'upload') {
      const up = await findUploadForJob(db, job.workspace_id, value);
      if (!up || up.file_type !== 'video') throw nonRetryable(failureTypes.inputUnavailable, `file upload ${value} is no longer available as a video`);
      return { key: up.object_key, frame };
    }
    // Fetched when the job started (activities/uploads.ts fetchRemoteInput names it input-<role>.<ext>).
    for await (const o of storage.list(`${storage.jobMediaPrefix(job.id)}/input-${input.role}.`)) return { key: o.key, frame };
    throw nonRetryable(failureTypes.inputUnavailable, `the background video fetched from ${name} is no longer stored`);
  }
  return undefined;
}
