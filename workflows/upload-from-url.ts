// uploadFromUrl: runs the fetch activity for POST /v1/upload-from-url and returns the stored upload.
// Started by the gateway with workflow id = upload id on the workflow queue; the gateway waits for
// the result. The activity does all the I/O (SSRF-safe fetch, streaming into storage, the row).
import { proxyActivities } from '@temporalio/workflow';
import { taskQueues } from './definitions.js';
import { setVersioningBehavior } from './versioning.js';
import type { StoredUpload } from '../shared/uploads.js';

export type { StoredUpload } from '../shared/uploads.js';

export interface UploadFromUrlInput {
  uploadId: string;
  workspaceId: string;
  projectId: string;
  url: string;
  /** How long the upload is served and usable, from its storing (absent: the worker's default). */
  retentionSeconds?: number;
  /** Start-to-close timeout of one fetch attempt (the fetch's own total timeout plus a margin). */
  attemptTimeoutMs: number;
  /** The workflow runs on the workflow fleet; the fetch runs on this prefix's fetch queue. */
  taskQueuePrefix: string;
}

export interface UploadFetchActivities {
  fetchRemoteUpload(input: UploadFromUrlInput): Promise<StoredUpload>;
}

/**
 * Final failure types of the fetch activity (activities/uploads.ts `uploadFailureTypes`; literals
 * here so this sandboxed module imports nothing from activities/). Only FetchUnavailable is retried.
 */
const nonRetryableUploadFailureTypes = ['UrlRefused', 'TooLarge', 'UnsupportedType', 'FetchFailed'];

export async function uploadFromUrl(input: UploadFromUrlInput): Promise<StoredUpload> {
  const { fetchRemoteUpload } = proxyActivities<UploadFetchActivities>({
    taskQueue: taskQueues(input.taskQueuePrefix).fetch,
    startToCloseTimeout: input.attemptTimeoutMs,
    retry: {
      initialInterval: '500 ms',
      backoffCoefficient: 2,
      maximumInterval: '5 s',
      maximumAttempts: 3,
      nonRetryableErrorTypes: nonRetryableUploadFailureTypes,
    },
  });
  return fetchRemoteUpload(input);
}

// Pinned: it lives one fetch (at most three attempts, while the gateway waits), so draining a build
// waits for it a minute at most, and its fetch runs on the same build's fetch fleet, which returns
// the upload shape this build's gateway and workflow expect.
setVersioningBehavior('PINNED', uploadFromUrl);
