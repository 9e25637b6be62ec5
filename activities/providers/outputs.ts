// Provider outputs into our store. A provider's output URL is fetched like any remote URL
// (shared/fetch-remote.ts through storeRemoteFile: https only, public addresses pinned, redirects
// re-checked, timeouts, a byte cap while streaming) and additionally only from that provider's CDN
// hosts; the bytes decide the type (images and videos only); a long video heartbeats its progress so
// the activity's heartbeat timeout does not end it mid-stream.
import type { Config } from '../../shared/config.js';
import type { ProviderName } from '../../workflows/definitions.js';
import { jobOutputKey, type Storage } from '../../shared/storage.js';
import { storeRemoteFile, type FetchHooks } from '../uploads.js';
import { MB } from '../../shared/media-type.js';
import { falCdnHosts, hostMatches } from './fal.js';
import type { ProviderOutput } from './types.js';

/** xAI serves generated videos from its own domain (vidgen.x.ai). */
export const xaiCdnHosts = ['x.ai', '*.x.ai'] as const;

/**
 * Google serves generated videos from the Gemini API's origin (the `video.uri` of an operation). The
 * host that download redirects to is not documented (Google's user-content hosts in practice): an
 * operator adds it with PROVIDER_OUTPUT_HOSTS if downloads are refused.
 */
export const googleOutputHosts = ['generativelanguage.googleapis.com'] as const;

/**
 * BytePlus ModelArk serves generated videos as signed URLs on its object storage (docs samples are on
 * *.bytepluses.com; the exact host of `content.video_url` is not documented): an operator adds it with
 * PROVIDER_OUTPUT_HOSTS if downloads are refused. Seedream images arrive as base64 in the answer.
 */
export const byteplusOutputHosts = ['*.bytepluses.com'] as const;

/**
 * Alibaba's DashScope answers a signed OSS URL on an aliyuncs.com host (its examples:
 * dashscope-result-bj.oss-cn-beijing.aliyuncs.com, dashscope-result-sh.oss-accelerate.aliyuncs.com);
 * the bucket and region vary, so the whole domain is allowed.
 */
export const alibabaOutputHosts = ['*.aliyuncs.com'] as const;

/** Where each provider's output files may come from. OpenAI answers base64; the local renderer writes to our store. */
export const providerOutputHosts: Record<ProviderName, readonly string[]> = {
  fal: falCdnHosts,
  // The talking-actor video is a fal lipsync output.
  elevenlabs: falCdnHosts,
  xai: xaiCdnHosts,
  google: googleOutputHosts,
  byteplus: byteplusOutputHosts,
  alibaba: alibabaOutputHosts,
  openai: [],
  // Azure OpenAI answers base64 too.
  azure: [],
  local: [],
};

export type OutputFetchConfig = Pick<
  Config,
  'FETCH_CONNECT_TIMEOUT_MS' | 'FETCH_TOTAL_TIMEOUT_MS' | 'FETCH_ALLOW_LOOPBACK_ORIGIN' | 'FETCH_EXTRA_CA_FILE' | 'PROVIDER_OUTPUT_HOSTS' | 'PROVIDER_OUTPUT_MAX_MB' | 'PROVIDER_OUTPUT_TIMEOUT_MS'
  | 'FETCH_MIN_BYTES_PER_SECOND' | 'FETCH_MIN_RATE_WINDOW_MS' | 'UPLOAD_MAX_IMAGE_PIXELS'
>;

/** The host patterns a provider's outputs may come from here (its CDN plus PROVIDER_OUTPUT_HOSTS). */
export function outputHostsFor(provider: ProviderName, config: Pick<OutputFetchConfig, 'PROVIDER_OUTPUT_HOSTS'>): string[] {
  const extra = (config.PROVIDER_OUTPUT_HOSTS ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  return [...providerOutputHosts[provider], ...extra];
}

export interface StoredOutput {
  key: string;
  contentType: string;
  size: number;
}

/**
 * Streams one provider output URL into `<job media prefix>/output-<n>.<ext>`. Fails with FetchError or
 * MediaError (mapped by the caller) when the host is not allowed, the file is too large or not media.
 */
export async function storeProviderOutput(
  deps: { storage: Storage; config: OutputFetchConfig; fetchHooks?: FetchHooks },
  args: { provider: ProviderName; jobId: string; index: number; output: ProviderOutput; headers?: Record<string, string>; onProgress?: (bytes: number) => void },
): Promise<StoredOutput> {
  const hosts = outputHostsFor(args.provider, deps.config);
  const maxBytes = deps.config.PROVIDER_OUTPUT_MAX_MB * MB;
  const stored = await storeRemoteFile(deps, args.output.url!, { image: maxBytes, video: maxBytes }, (t) => jobOutputKey(deps.storage, args.jobId, args.index + 1, t.ext), null, {
    fetch: { headers: args.headers, allowHost: (host) => hostMatches(host, hosts), totalTimeoutMs: deps.config.PROVIDER_OUTPUT_TIMEOUT_MS },
    onProgress: args.onProgress,
  });
  return { key: stored.key, contentType: stored.type.mime, size: stored.size };
}
