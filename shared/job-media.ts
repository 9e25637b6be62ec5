// The key scheme of a job's media under its unguessable prefix (Storage.jobMediaPrefix): its outputs,
// and the inputs its provider request names, which a failed job keeps for a reset run.
import type { Storage } from './storage.js';

/**
 * The one key scheme of a job's outputs: `<job media prefix>/output-<n>.<ext>`, n counted from 1,
 * under the job's unguessable media prefix. Every provider and the local renderer store this way;
 * keys already stored stay as they are (a job row holds its own keys).
 */
export function jobOutputKey(storage: Pick<Storage, 'jobMediaPrefix'>, jobId: string, n: number, ext: string): string {
  return `${storage.jobMediaPrefix(jobId)}/output-${n}.${ext}`;
}

/**
 * A file of a job's media prefix that its provider request names and a step before the provider
 * made: a URL input it fetched (activities/uploads.ts names them `input-<role>.<ext>`) or the speech
 * its speech step stored (`speech.wav`, providers/elevenlabs/adapter.ts).
 */
export const isRequestInput = (key: string): boolean => /\/(input-[^/]*|speech\.wav)$/.test(key);

/**
 * The outputs stored for a job under its media prefix (jobOutputKey), in order, with their type
 * and size: what a job whose completion was lost is completed from.
 */
export async function jobOutputs(
  storage: Pick<Storage, 'jobMediaPrefix' | 'list' | 'stat'>,
  jobId: string,
): Promise<{ key: string; content_type: string; size: number }[]> {
  const found: { n: number; key: string }[] = [];
  for await (const o of storage.list(`${storage.jobMediaPrefix(jobId)}/`)) {
    const m = /\/output-(\d+)\.[^/]+$/.exec(o.key);
    if (m) found.push({ n: Number(m[1]), key: o.key });
  }
  found.sort((a, b) => a.n - b.n);
  const outputs = [];
  for (const { key } of found) {
    const st = await storage.stat(key);
    if (st) outputs.push({ key, content_type: st.contentType, size: st.size });
  }
  return outputs;
}
