// Provider outputs into our store. A provider's output URL is fetched like any remote URL
// (shared/fetch-remote.ts through storeRemoteFile: https only, public addresses pinned, redirects
// re-checked, timeouts, a byte cap while streaming) and additionally only from that provider's CDN
// hosts; the bytes decide the type (images and videos only); a long video heartbeats its progress so
// the activity's heartbeat timeout does not end it mid-stream.
import type { Config } from '../../shared/config.js';
import type { ProviderName } from '../../workflows/definitions.js';
import type { Storage } from '../../shared/storage.js';
import { jobOutputKey } from '../../shared/job-media.js';
import { storeRemoteFile, type FetchHooks } from '../uploads.js';
import { MB } from '../../shared/media/type.js';
import { urlMatches } from './hosts.js';
import { providerOutputHosts as ownHosts } from '../../providers/index.js';
import type { ProviderOutput } from './types.js';

/** Where each provider's output files may come from (its descriptor); the local renderer writes to our store. */
export function providerOutputHosts(provider: ProviderName): readonly string[] {
  return provider === 'local' ? [] : ownHosts[provider].hosts;
}

type OutputFetchConfig = Pick<
  Config,
  | 'FETCH_CONNECT_TIMEOUT_MS'
  | 'FETCH_TOTAL_TIMEOUT_MS'
  | 'FETCH_ALLOW_LOOPBACK_ORIGIN'
  | 'FETCH_EXTRA_CA_FILE'
  | 'PROVIDER_OUTPUT_HOSTS'
  | 'PROVIDER_OUTPUT_MAX_MB'
  | 'FETCH_MIN_BYTES_PER_SECOND'
  | 'UPLOAD_MAX_IMAGE_PIXELS'
>;

/**
 * A provider output must be fetched within this long: a gigabyte video at about 1.2 MB/s, far below
 * what a provider's CDN serves, while a source that slows to a trickle is cut off sooner by the
 * minimum rate (FETCH_MIN_BYTES_PER_SECOND).
 */
const OUTPUT_FETCH_TIMEOUT_MS = 900_000;

/** The host patterns a provider's outputs may come from here: its own, plus the operator's for it (PROVIDER_OUTPUT_HOSTS). */
export function outputHostsFor(provider: ProviderName, config: Pick<OutputFetchConfig, 'PROVIDER_OUTPUT_HOSTS'>): string[] {
  return [...providerOutputHosts(provider), ...extraOutputHosts(config.PROVIDER_OUTPUT_HOSTS, provider)];
}

/**
 * The operator's extra output hosts of one provider: PROVIDER_OUTPUT_HOSTS is `provider=host,host`
 * entries separated by `;` ("google=video-downloads.googleusercontent.com;byteplus=my-bucket.example.com").
 * A list without `provider=` applies to every provider (the older form, kept for development setups).
 * Extra hosts never receive a provider's key.
 */
export function extraOutputHosts(value: string | undefined, provider: ProviderName): string[] {
  const hosts: string[] = [];
  for (const entry of (value ?? '')
    .split(';')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const eq = entry.indexOf('=');
    if (eq >= 0 && entry.slice(0, eq).trim() !== provider) continue;
    hosts.push(
      ...entry
        .slice(eq + 1)
        .split(',')
        .map((h) => h.trim())
        .filter(Boolean),
    );
  }
  return hosts;
}

interface StoredOutput {
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
  args: {
    provider: ProviderName;
    jobId: string;
    index: number;
    output: ProviderOutput;
    headers?: Record<string, string>;
    onProgress?: (bytes: number) => void;
  },
): Promise<StoredOutput> {
  const hosts = outputHostsFor(args.provider, deps.config);
  const maxBytes = deps.config.PROVIDER_OUTPUT_MAX_MB * MB;
  const stored = await storeRemoteFile(
    deps,
    args.output.url!,
    { image: maxBytes, video: maxBytes },
    (t) => jobOutputKey(deps.storage, args.jobId, args.index + 1, t.ext),
    null,
    {
      fetch: { headers: args.headers, allowHost: (_host, url) => urlMatches(url, hosts), totalTimeoutMs: OUTPUT_FETCH_TIMEOUT_MS },
      onProgress: args.onProgress,
    },
  );
  return { key: stored.key, contentType: stored.type.mime, size: stored.size };
}
