// An upload from a public URL (POST /v1/upload-from-url): the worker fetches and stores the file in
// the uploadFromUrl workflow while the gateway waits for its result, within a deadline.
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import type { AppDeps } from '../deps.js';
import { ApiError, invalidRequest } from '../errors.js';
import { publicBaseUrl } from '../routes/media.js';
import { newId } from '../../shared/ids.js';
import { FetchError, precheckUrl } from '../../shared/fetch-remote.js';
import { uploadFailureTypes } from '../../shared/uploads.js';
import { taskQueues } from '../../workflows/definitions.js';
import { taskPriority } from '../../shared/task-priority.js';
import { workspaceShareWeight } from '../../db/repos/fair-share.js';
import type { StoredUpload, UploadFromUrlInput } from '../../workflows/upload-from-url.js';
import { uploadRecord, type UploadRecord } from './records.js';
import { requireProject, retentionSeconds } from './rules.js';

interface UploadFromUrlRequest {
  url: string;
  project_id: string;
  expires_in_seconds?: number | undefined;
}

/** Checks the request, then fetches and stores the URL's file; answers its record. */
export async function uploadFromUrl(deps: AppDeps, workspaceId: string, body: UploadFromUrlRequest): Promise<UploadRecord> {
  const retention = retentionSeconds(deps, body.expires_in_seconds);
  try {
    precheckUrl(body.url, deps.config.FETCH_ALLOW_LOOPBACK_ORIGIN);
  } catch (err) {
    if (err instanceof FetchError) throw invalidRequest(`URL refused: ${err.message}`);
    throw err;
  }
  await requireProject(deps, workspaceId, body.project_id);
  const stored = await runUploadFromUrl(deps, deps.temporal, {
    uploadId: newId('upl'),
    workspaceId,
    projectId: body.project_id,
    url: body.url,
    retentionSeconds: retention,
    attemptTimeoutMs: deps.config.FETCH_TOTAL_TIMEOUT_MS + 5_000,
    taskQueuePrefix: deps.config.TASK_QUEUE_PREFIX,
  });
  return uploadRecord(stored, publicBaseUrl(deps.config));
}

function findApplicationFailure(err: unknown): ApplicationFailure | undefined {
  let cur: unknown = err;
  while (cur instanceof Error) {
    if (cur instanceof ApplicationFailure && cur.type) return cur;
    cur = cur instanceof TemporalFailure || cur instanceof WorkflowFailedError ? cur.cause : undefined;
  }
  return undefined;
}

const refusalTypes = new Set<string>(Object.values(uploadFailureTypes));

async function runUploadFromUrl(deps: AppDeps, temporal: Client, input: UploadFromUrlInput): Promise<StoredUpload> {
  const handle = await temporal.workflow
    .start('uploadFromUrl', {
      taskQueue: taskQueues(deps.config.TASK_QUEUE_PREFIX).workflows,
      workflowId: input.uploadId,
      args: [input],
      workflowExecutionTimeout: deps.config.UPLOAD_FROM_URL_TIMEOUT_MS,
      // Its fetch waits on the fetch queue with the workspace's fair share, as a job's inputs do.
      priority: taskPriority(
        { workspaceId: input.workspaceId, priority: 'normal', fairnessWeight: await workspaceShareWeight(deps.db, input.workspaceId) },
        { fairness: deps.config.FAIR_SHARE },
      ),
    })
    .catch(() => {
      throw new ApiError(503, 'service_unavailable', 'the upload service is temporarily unavailable; try again later');
    });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ApiError(503, 'service_unavailable', 'fetching the URL did not finish in time; try again later')),
      deps.config.UPLOAD_FROM_URL_TIMEOUT_MS,
    );
  });
  try {
    // The deadline bounds the long poll itself; the timer turns it into a clean 503.
    const result = temporal.withDeadline(Date.now() + deps.config.UPLOAD_FROM_URL_TIMEOUT_MS + 1_000, () => handle.result());
    return (await Promise.race([result, timeout])) as StoredUpload;
  } catch (err) {
    if (err instanceof ApiError) {
      await handle.terminate('the gateway stopped waiting').catch(() => undefined);
      throw err;
    }
    const failure = findApplicationFailure(err);
    if (failure?.type === uploadFailureTypes.quotaExceeded) throw new ApiError(413, 'storage_quota_exceeded', failure.message);
    if (failure?.type && refusalTypes.has(failure.type)) throw invalidRequest(failure.message);
    if (err instanceof WorkflowFailedError && /timed out|timeout/i.test(String(err.cause?.message ?? ''))) {
      throw new ApiError(503, 'service_unavailable', 'fetching the URL did not finish in time; try again later');
    }
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
