// GET /media/<object key>: the public, unauthenticated read path for media the service itself
// serves — the catalog (actor images, preview videos, voice previews) and uploads (whose keys carry
// random ids, so they are unguessable). Anything else in the bucket (job outputs) is never served
// here: those go through the authenticated /url endpoints. An upload is served only while its
// record is completed and before its expiry: an expired or deleted one answers 410 `gone` (its
// object may still exist for a job in flight), a key without a record 404.
import { Router, type Request, type Response, type NextFunction } from 'express';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Storage } from '../../shared/storage.js';
import type { Config } from '../../shared/config.js';
import type { Queryable } from '../../db/index.js';
import { findUploadByObjectKey, uploadUnavailable } from '../../db/repos/uploads.js';
import { uploadIdOfPublicKey } from '../../shared/uploads.js';
import { ApiError } from '../errors.js';
import { RATE_WINDOW_MS, setRateLimitHeaders, type RateDecision } from '../rate-limit.js';

/** Key prefixes served publicly, and how long clients may cache them. */
const publicPrefixes: ReadonlyArray<{ prefix: string; cacheControl: string }> = [
  // Catalog media only changes when the catalog does; a day is a safe cache lifetime.
  { prefix: 'catalog/', cacheControl: 'public, max-age=86400' },
  // Uploads belong to one workspace: browsers may keep them (up to their expiry), shared caches and
  // CDNs must not.
  { prefix: 'uploads/', cacheControl: 'private, max-age=3600' },
];

/** The path under which an object key is served, e.g. for actor records' URL fields. */
export function mediaPath(key: string): string {
  return `/media/${key.split('/').map(encodeURIComponent).join('/')}`;
}

/** The absolute URL of a publicly served object key, given the gateway's base URL. */
/**
 * Where /media/* is reachable from the client: PUBLIC_BASE_URL (the gateway process sets it to its
 * own listening address when unset). Never the request's Host header, which the client controls.
 */
export function publicBaseUrl(config: Pick<Config, 'PUBLIC_BASE_URL' | 'HOST' | 'PORT'>): string {
  return config.PUBLIC_BASE_URL ?? `http://${config.HOST}:${config.PORT}`;
}

export function mediaUrl(baseUrl: string, key: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${mediaPath(key)}`;
}

/**
 * Validates the decoded path segments and returns the object key, or null when the key must not be
 * served (traversal, empty segments, control characters, a prefix that is not public).
 */
function publicObjectKey(segments: readonly string[]): { key: string; cacheControl: string } | null {
  if (segments.length < 2) return null;
  for (const s of segments) {
    if (s === '' || s === '.' || s === '..' || s.includes('/') || s.includes('\\') || /[\u0000-\u001f\u007f]/.test(s)) return null;
  }
  const key = segments.join('/');
  if (key.length > 1024) return null;
  const rule = publicPrefixes.find((p) => key.startsWith(p.prefix));
  return rule ? { key, cacheControl: rule.cacheControl } : null;
}

/** Parses a single `bytes=` range against a size; undefined = ignore the header, null = unsatisfiable. */
function parseRange(header: string | undefined, size: number): { start: number; end: number } | null | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m) return undefined; // multi-range or malformed: serve the whole object (allowed by RFC 9110)
  const [, a = '', b = ''] = m;
  if (a === '' && b === '') return undefined;
  let start: number;
  let end: number;
  if (a === '') {
    const suffix = Number(b);
    if (suffix === 0) return null;
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(a);
    end = b === '' ? size - 1 : Math.min(Number(b), size - 1);
  }
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start >= size || start > end) return null;
  return { start, end };
}

/** Browsers may keep an upload at most this long, and never past its expiry. */
const UPLOAD_MAX_AGE_S = 3600;

/** Whether an upload key may be served now, and for how long a browser may keep it (seconds). */
async function uploadServable(db: Queryable, key: string): Promise<number> {
  const id = uploadIdOfPublicKey(key);
  const row = id ? await findUploadByObjectKey(db, id, key) : undefined;
  if (!row) throw new ApiError(404, 'not_found', 'media not found');
  const unavailable = uploadUnavailable(row);
  if (unavailable === 'expired' || unavailable === 'deleted')
    throw new ApiError(410, 'gone', `this upload ${unavailable === 'expired' ? 'expired' : 'was deleted'}`);
  if (unavailable) throw new ApiError(404, 'not_found', 'media not found');
  return row.expires_at ? Math.max(0, Math.min(UPLOAD_MAX_AGE_S, Math.floor((row.expires_at.getTime() - Date.now()) / 1000))) : UPLOAD_MAX_AGE_S;
}

export function createMediaRouter(deps: { storage: Storage; db: Queryable; config: Pick<Config, 'MEDIA_RATE_LIMIT_PER_MIN'> }): Router {
  const router = Router();
  const limiter = createClientLimiter(deps.config.MEDIA_RATE_LIMIT_PER_MIN, RATE_WINDOW_MS);

  const serve = async (req: Request, res: Response, next: NextFunction) => {
    try {
      // No key here, so the limit is per client address (this replica's own count: it guards this
      // process and the store behind it, and costs no shared state per request). req.ip is the
      // address a trusted load balancer names (TRUST_PROXY), else the socket's.
      const d = limiter.take(req.ip ?? req.socket.remoteAddress ?? 'unknown');
      setRateLimitHeaders(res, d);
      if (!d.allowed)
        throw new ApiError(429, 'rate_limited', `rate limit of ${d.limit} media requests per minute exceeded; retry in ${Math.max(1, d.resetMs)} ms`, {
          retry_after_ms: Math.max(1, d.resetMs),
        });
      const raw = (req.params as { key?: string[] | string }).key;
      const segments = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split('/') : [];
      const target = publicObjectKey(segments);
      if (!target) throw new ApiError(404, 'not_found', 'media not found');
      const maxAge = target.key.startsWith('uploads/') ? await uploadServable(deps.db, target.key) : undefined;
      const stat = await deps.storage.stat(target.key);
      if (!stat) throw new ApiError(404, 'not_found', 'media not found');

      res.setHeader('Content-Type', stat.contentType);
      res.setHeader('Cache-Control', maxAge === undefined ? target.cacheControl : `private, max-age=${maxAge}`);
      res.setHeader('Accept-Ranges', 'bytes');
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Content-Disposition', 'inline');

      const range = parseRange(req.headers.range, stat.size);
      if (range === null) {
        res.setHeader('Content-Range', `bytes */${stat.size}`);
        res.status(416).json({ error: { code: 'invalid_request', message: 'requested range is not satisfiable' } });
        return;
      }
      if (range) {
        res.status(206);
        res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${stat.size}`);
        res.setHeader('Content-Length', String(range.end - range.start + 1));
      } else {
        res.setHeader('Content-Length', String(stat.size));
      }
      if (req.method === 'HEAD') {
        res.end();
        return;
      }
      // A range is read from the store as a range: `bytes=0-0` of 50 MB moves one byte.
      const body: Readable = range
        ? await deps.storage.getRange(target.key, range.start, range.end - range.start + 1)
        : await deps.storage.getStream(target.key);
      try {
        await pipeline(body, res);
      } catch {
        // Client went away or the store broke mid-stream: headers are sent, so just drop the socket.
        body.destroy();
        if (!res.writableEnded) res.destroy();
      }
    } catch (err) {
      next(err);
    }
  };

  router.get('/media/*key', serve);
  return router;
}

/** A limiter holds at most this many client addresses; the oldest window is dropped past it. */
const LIMITER_MAX_CLIENTS = 50_000;

/**
 * Fixed-window request counts per client address, in memory: `limit` requests per window each.
 * Bounded in size; an address evicted early simply starts a fresh window.
 */
export function createClientLimiter(limit: number, windowMs: number, now: () => number = Date.now) {
  const windows = new Map<string, { start: number; count: number }>();
  return {
    take(client: string): RateDecision {
      const t = now();
      let w = windows.get(client);
      if (!w || w.start + windowMs <= t) {
        windows.delete(client);
        if (windows.size >= LIMITER_MAX_CLIENTS) windows.delete(windows.keys().next().value!);
        w = { start: t, count: 0 };
        windows.set(client, w);
      }
      w.count = Math.min(w.count, limit) + 1;
      return { allowed: w.count <= limit, limit, remaining: Math.max(0, limit - w.count), resetMs: Math.max(0, w.start + windowMs - t) };
    },
  };
}
