// Outputs conformed after they are stored, so a model's stored output has the same format whatever
// route served it (shared/catalog.ts storedFormat): an image a provider answered as JPEG or WebP
// (BytePlus's Seedream, say) is re-encoded to PNG, which loses nothing of the decoded image and takes
// well under a second. Videos are not re-encoded: a route whose video shape differs is never an
// alternate for the job (shared/catalog.ts sameOutput), so there is nothing to scale. The provider's
// file is untrusted media: it goes through media-tools.ts's inspection and caps.
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { JobOutput } from '../../shared/job-model.js';
import type { Storage } from '../../shared/storage.js';
import { inspectUntrusted, outputThreadArgs, runFfmpegUntrusted, untrustedInputArgs, type MediaTools } from './media-tools.js';

/** Image types re-encoded to PNG before the job completes. */
const toPng = new Set(['image/jpeg', 'image/webp']);

/** The key of the PNG an output at `key` is re-encoded into (its extension replaced). */
export const pngKeyOf = (key: string): string => key.replace(/\.[^./]+$/, '') + '.png';

/**
 * The stored output as the job keeps it: a JPEG or WebP image re-encoded to PNG next to it (the
 * original removed), with `converted_from` saying what the provider answered. A PNG an earlier
 * attempt already wrote is taken as it is. Anything else is returned unchanged.
 */
export async function conformOutput(
  storage: Storage,
  tools: MediaTools,
  out: JobOutput,
  opts: { signal?: AbortSignal; heartbeat?: () => void } = {},
): Promise<JobOutput> {
  if (!toPng.has(out.content_type)) return out;
  const target = pngKeyOf(out.key);
  const dir = await mkdtemp(join(tmpdir(), 'output-conform-'));
  try {
    const input = join(dir, 'in');
    const output = join(dir, 'out.png');
    await pipeline(await storage.getStream(out.key), createWriteStream(input));
    opts.heartbeat?.();
    const inspected = await inspectUntrusted(input, 'image', 'the provider output', tools, opts.signal);
    await runFfmpegUntrusted(
      ['-y', ...untrustedInputArgs(inspected, tools), ...outputThreadArgs(tools), '-frames:v', '1', '-c:v', 'png', '-f', 'image2', output],
      tools,
      { signal: opts.signal, timeoutMs: 60_000 },
    );
    const bytes = await readFile(output);
    const put = await storage.putStream(target, bytes, 'image/png', bytes.length);
    await storage.remove(out.key);
    return { key: target, content_type: 'image/png', size: put.size, converted_from: out.content_type };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * An output whose original is gone but whose PNG is stored: an earlier attempt converted it and
 * failed before reporting. Undefined when that is not the case.
 */
export async function alreadyConformed(storage: Storage, key: string, contentType: string | undefined): Promise<JobOutput | undefined> {
  if (!contentType || !toPng.has(contentType)) return undefined;
  const st = await storage.stat(pngKeyOf(key));
  return st ? { key: pngKeyOf(key), content_type: 'image/png', size: st.size, converted_from: contentType } : undefined;
}
