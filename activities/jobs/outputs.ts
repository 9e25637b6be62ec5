// A finished generation's outputs, streamed into our store, then conformed to the model's stored
// format (an image answered as JPEG or WebP is kept as PNG, or in the format the job asked:
// ../providers/output-conform.ts), and
// composited over the job's background video when it has one (../providers/background.ts).
import { ApplicationFailure } from '@temporalio/activity';
import type { JobOutput } from '../../db/schema.js';
import { failureTypes } from '../../shared/failure-types.js';
import { storeProviderOutput } from '../providers/outputs.js';
import { toApplicationFailure } from '../uploads.js';
import type { ProviderOutput } from '../providers/types.js';
import type { ProviderName } from '../../shared/job-model.js';
import { nonRetryable, type JobActivityDeps } from './common.js';
import { alreadyConformed, conformOutput } from '../providers/output-conform.js';
import { mediaToolsFrom, UntrustedMediaError } from '../providers/media-tools.js';
import { compositeOverBackground, CompositeError } from '../providers/background.js';
import type { ImageTarget } from '../../shared/output-format.js';

type Frame = { width: number; height: number };

/** A background video in our store the job's video outputs are composited over, at the job's frame (./background.ts). */
interface Background {
  key: string;
  frame: Frame;
}

/**
 * Streams a finished generation's outputs into our store (its own function so the provider
 * activities and their tests share it). `heartbeat` is called as the bytes arrive.
 */
export function createOutputStore(deps: Pick<JobActivityDeps, 'storage' | 'config' | 'adapterFor'> & { heartbeat(details?: unknown): void }) {
  const { storage, heartbeat } = deps;
  /**
   * Streams every output into our store. Outputs already there are checked, unless `writtenNow`:
   * the adapter wrote them within this same activity and reported their type and size.
   */
  const tools = mediaToolsFrom(deps.config);
  /** The output as the job keeps it: images other than PNG re-encoded (a provider file that does not decode fails the job). */
  async function conformed(out: JobOutput, i: number, frame: Frame | undefined, image: ImageTarget | undefined): Promise<JobOutput> {
    try {
      return await conformOutput(storage, tools, out, { frame, image, heartbeat: () => heartbeat({ output: i, phase: 'conform' }) });
    } catch (err) {
      const message = err instanceof UntrustedMediaError ? err.message : 'the provider output could not be decoded';
      throw nonRetryable(failureTypes.providerRejected, `output ${i + 1}: ${message}`);
    }
  }
  /** A video output over the job's background (a failure of the composite fails the job, naming the input at fault). */
  async function composited(out: JobOutput, i: number, background: Background, fresh: boolean): Promise<JobOutput> {
    if (!out.content_type.startsWith('video/')) return out;
    try {
      return await compositeOverBackground(storage, tools, out, background.key, background.frame, {
        fresh,
        heartbeat: () => heartbeat({ output: i, phase: 'composite' }),
      });
    } catch (err) {
      if (!(err instanceof CompositeError)) throw err;
      throw nonRetryable(err.input === 'background' ? failureTypes.inputUnavailable : failureTypes.providerRejected, `output ${i + 1}: ${err.message}`);
    }
  }
  /**
   * `frame`: the asked frame a video is scaled to when its route's frame is undocumented
   * (shared/catalog.ts outputFrame); otherwise videos are kept as answered. `background`: the
   * job's background video, which its video outputs are composited over. `image`: the format an
   * image job's outputs are stored in (PNG by default).
   */
  return async function store(
    provider: ProviderName,
    jobId: string,
    outputs: ProviderOutput[],
    writtenNow = false,
    frame?: Frame,
    background?: Background,
    image?: ImageTarget,
  ): Promise<JobOutput[]> {
    const kept: JobOutput[] = [];
    // Which outputs were just stored from the provider (not only found in our store, where an earlier attempt may have composited them).
    const fresh: boolean[] = [];
    // One at a time: each re-encode is an ffmpeg run on the worker's few cores.
    for (const [i, out] of (await storeAsAnswered(provider, jobId, outputs, writtenNow, fresh, image)).entries()) {
      const conformedOut = out.converted_from ? out : await conformed(out, i, frame, image);
      kept.push(background ? await composited(conformedOut, i, background, fresh[i]!) : conformedOut);
    }
    return kept;
  };
  async function storeAsAnswered(
    provider: ProviderName,
    jobId: string,
    outputs: ProviderOutput[],
    writtenNow: boolean,
    fresh: boolean[],
    image: ImageTarget | undefined,
  ): Promise<JobOutput[]> {
    const adapter = deps.adapterFor(provider);
    const stored: JobOutput[] = [];
    for (const [i, out] of outputs.entries()) {
      heartbeat(i);
      fresh[i] = !out.key || writtenNow;
      if (out.key && writtenNow && out.contentType && out.size !== undefined) {
        stored.push({ key: out.key, content_type: out.contentType, size: out.size });
        continue;
      }
      if (out.key) {
        const st = await storage.stat(out.key);
        // An earlier attempt re-encoded it (and removed it) before failing to report.
        const converted = st ? undefined : await alreadyConformed(storage, out.key, out.contentType, image);
        if (converted) {
          stored.push(converted);
          continue;
        }
        if (!st) throw ApplicationFailure.create({ type: failureTypes.providerUnavailable, message: `output ${out.key} is missing from storage` });
        stored.push({ key: out.key, content_type: out.contentType ?? st.contentType, size: st.size });
        continue;
      }
      if (!out.url) throw nonRetryable(failureTypes.providerRejected, 'provider returned an output without a URL');
      // Through the guarded fetcher, from the provider's CDN hosts only, capped, sniffed, heartbeating.
      let lastBeat = 0;
      let saved: { key: string; contentType: string; size: number };
      try {
        saved = await storeProviderOutput(
          { storage, config: deps.config },
          {
            provider,
            jobId,
            index: i,
            output: out,
            headers: adapter.outputHeaders?.(out),
            onProgress: (bytes) => {
              const now = Date.now();
              if (now - lastBeat < 1000) return;
              lastBeat = now;
              heartbeat({ output: i, bytes });
            },
          },
        );
      } catch (err) {
        const failure = toApplicationFailure(err, failureTypes.providerRejected);
        if (failure instanceof ApplicationFailure) failure.message = `output ${i + 1}: ${failure.message}`;
        throw failure;
      }
      stored.push({ key: saved.key, content_type: saved.contentType, size: saved.size });
    }
    return stored;
  }
}
