// A finished generation's outputs, streamed into our store.
import { ApplicationFailure } from '@temporalio/activity';
import type { JobOutput } from '../../db/schema.js';
import { failureTypes } from '../../shared/failure-types.js';
import { storeProviderOutput } from '../providers/outputs.js';
import { toApplicationFailure } from '../uploads.js';
import type { ProviderOutput } from '../providers/types.js';
import type { ProviderName } from '../../shared/job-model.js';
import { nonRetryable, type JobActivityDeps } from './common.js';

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
  return async function store(provider: ProviderName, jobId: string, outputs: ProviderOutput[], writtenNow = false): Promise<JobOutput[]> {
    const adapter = deps.adapterFor(provider);
    const stored: JobOutput[] = [];
    for (const [i, out] of outputs.entries()) {
      heartbeat(i);
      if (out.key && writtenNow && out.contentType && out.size !== undefined) {
        stored.push({ key: out.key, content_type: out.contentType, size: out.size });
        continue;
      }
      if (out.key) {
        const st = await storage.stat(out.key);
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
  };
}
