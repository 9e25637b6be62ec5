// Remote fetching (upload-from-url and job inputs given as URLs) through the SSRF-guarded fetcher.
import { int, optionalString } from './env-types.js';

export const fetchEnv = {
  FETCH_CONNECT_TIMEOUT_MS: int(5_000, 100).describe('A remote fetch must connect within this long.'),
  FETCH_TOTAL_TIMEOUT_MS: int(60_000, 100).describe('A remote fetch must finish within this long.'),
  // A slow server must not hold a fetch slot for the whole total timeout.
  FETCH_MIN_BYTES_PER_SECOND: int(16 * 1024, 0).describe(
    'A transfer slower than this, averaged over each 10 s, is aborted: a slow server cannot hold a fetch slot for the whole total timeout. 0: off.',
  ),
  FETCH_ACTIVITY_CONCURRENCY: int(20, 1).describe('Remote fetches run on their own task queue (`<prefix>-fetch`): this many at once per worker.'),
  FETCH_PER_WORKSPACE_CONCURRENCY: int(4, 1).describe("At most this many of one workspace's fetches in flight across the fleet."),
  FETCH_ALLOW_LOOPBACK_ORIGIN: optionalString
    .meta({ valueType: 'https origin' })
    .describe(
      'Test-only escape hatch: one loopback https origin (e.g. `https://127.0.0.1:8443`) that the SSRF guard lets through. Refused when NODE_ENV=production.',
    ),
  FETCH_EXTRA_CA_FILE: optionalString
    .meta({ valueType: 'file path' })
    .describe("A PEM file of extra certificate authorities remote fetches trust (tests: the fake origin's CA)."),
};
