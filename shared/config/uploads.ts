// Uploads (multipart, direct to storage, from a URL): limits and lifetimes.
import { int } from './env-types.js';

export const uploadsEnv = {
  UPLOAD_FROM_URL_TIMEOUT_MS: int(60_000, 1000).describe('POST /v1/upload-from-url: how long the fetch workflow may run before the request answers 503.'),
  UPLOAD_MAX_IMAGE_PIXELS: int(40_000_000, 1).describe('Uploads (all paths): images above this many pixels are refused (decompression bombs).'),
  DIRECT_UPLOAD_EXPIRY_SECONDS: int(900, 60, 7 * 24 * 3600).describe('Direct uploads: lifetime of the presigned POST.'),
  PENDING_UPLOAD_TTL_SECONDS: int(86_400, 1).describe(
    "How long a pending direct upload waits for its completion before the reconciler's sweep removes it and its object.",
  ),
  UPLOAD_RETENTION_SECONDS: int(30 * 86_400, 1).describe(
    "Completed uploads are served and usable as job inputs this long (default 30 days), then the reconciler's sweep removes their objects. Must not exceed UPLOAD_MAX_RETENTION_SECONDS.",
  ),
  UPLOAD_MAX_RETENTION_SECONDS: int(90 * 86_400, 1).describe('The longest retention a request may ask for (from 1 s up to this).'),
  WORKSPACE_UPLOAD_QUOTA_MB: int(10_240, 1).describe("Bytes one workspace's uploads may hold (completed, and pending at their declared size), in MB."),
  UPLOAD_MAX_CONCURRENT_PER_KEY: int(4, 1).describe(
    'Multipart uploads (POST /v1/upload) one API key may run at once across every gateway (leased slots in Postgres; 429 past it).',
  ),
  UPLOAD_MIN_BYTES_PER_SEC: int(8_192, 0).describe(
    'The slowest upload allowed: one that receives fewer bytes per second than this on average over UPLOAD_RATE_WINDOW_MS is cut (408) and what it stored is removed. 0: off.',
  ),
  UPLOAD_RATE_WINDOW_MS: int(30_000, 100, 600_000).describe('The window UPLOAD_MIN_BYTES_PER_SEC is averaged over.'),
};
