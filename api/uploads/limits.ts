// The limits a streaming upload is held to while its body arrives: a minimum transfer rate, a cap
// on the uploads one key runs at once across the fleet, and a bounded drain of what is left of a
// refused body.
import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import type { AppDeps } from '../deps.js';
import { authOf } from '../auth.js';
import { ApiError } from '../errors.js';
import { claimSlot, refreshSlot, releaseSlot, uploadSlots } from '../../db/repos/leased-slots.js';

/**
 * Stops reading the request into anything: the rest of the body is discarded so the client can
 * read the answer (an abrupt close while it still sends would often lose the answer to a reset),
 * but only for a bounded time and size; then the connection is cut.
 */
export function discardRest(req: Request): void {
  req.unpipe();
  // Already read to the end: nothing to discard, and no timer may outlive the request (the socket
  // goes on to carry the connection's next request, which the cut would kill).
  if (req.readableEnded || req.destroyed) return;
  let extra = 0;
  const cut = () => req.socket.destroy();
  const timer = setTimeout(cut, 5_000).unref();
  req.on('data', (chunk: Buffer) => {
    extra += chunk.length;
    if (extra > 64 * 1024 * 1024) cut();
  });
  req.on('end', () => clearTimeout(timer));
  req.on('close', () => clearTimeout(timer));
  req.resume();
}

/**
 * Cuts an upload that receives fewer than UPLOAD_MIN_BYTES_PER_SEC on average over a window of
 * UPLOAD_RATE_WINDOW_MS (a trickling client would hold a socket, a storage upload and a slot of its
 * key's concurrency for as long as it likes). Returns the function that stops the check.
 */
export function enforceMinimumRate(deps: AppDeps, req: Request, tooSlow: () => void): () => void {
  const { UPLOAD_MIN_BYTES_PER_SEC: perSecond, UPLOAD_RATE_WINDOW_MS: windowMs } = deps.config;
  if (perSecond === 0 || req.readableEnded) return () => undefined;
  let inWindow = 0;
  const count = (chunk: Buffer) => (inWindow += chunk.length);
  const timer = setInterval(() => {
    if (inWindow < (perSecond * windowMs) / 1000) tooSlow();
    inWindow = 0;
  }, windowMs);
  timer.unref();
  // Once the body has arrived, what is left (storage, the database) is the gateway's own time.
  const stop = () => {
    clearInterval(timer);
    req.off('data', count);
  };
  req.on('data', count);
  req.once('end', stop);
  req.once('close', stop);
  return stop;
}

export function tooSlow(deps: AppDeps): ApiError {
  const { UPLOAD_MIN_BYTES_PER_SEC: perSecond, UPLOAD_RATE_WINDOW_MS: windowMs } = deps.config;
  return new ApiError(
    408,
    'request_timeout',
    `the upload was cut: it arrived slower than the minimum of ${perSecond} bytes/s over ${windowMs / 1000} s; nothing was stored`,
  );
}

/**
 * At most UPLOAD_MAX_CONCURRENT_PER_KEY multipart uploads of one API key at once across every
 * gateway: each holds a socket and a storage upload for as long as it streams. A slot is a leased
 * row in Postgres (db/repos/leased-slots.ts), refreshed while the upload runs and freed when its
 * answer is sent or its connection closes; a gateway that dies frees its slots when their leases
 * (UPLOAD_SLOT_LEASE_MS) run out.
 */
export function limitConcurrentUploads(deps: AppDeps): RequestHandler {
  const max = deps.config.UPLOAD_MAX_CONCURRENT_PER_KEY;
  return (req, res, next) => {
    const { apiKeyId } = authOf(res);
    const holder = randomUUID();
    claimSlot(deps.db, uploadSlots, apiKeyId, max, holder, UPLOAD_SLOT_LEASE_MS).then(
      (slot) => {
        if (slot === null) {
          discardRest(req);
          res.setHeader('Retry-After', String(Math.ceil(UPLOAD_SLOT_RETRY_MS / 1000)));
          next(
            new ApiError(429, 'rate_limited', `at most ${max} uploads of one API key may run at once; retry when one has finished`, {
              retry_after_ms: UPLOAD_SLOT_RETRY_MS,
            }),
          );
          return;
        }
        const release = () =>
          releaseSlot(deps.db, uploadSlots, apiKeyId, slot, holder).catch((err: unknown) =>
            deps.logger.warn({ err: (err as Error).message }, 'upload slot release failed (its lease frees it)'),
          );
        // The connection closed while the slot was being claimed: nothing will stream.
        if (res.closed) return void release();
        const refresh = setInterval(() => {
          refreshSlot(deps.db, uploadSlots, apiKeyId, slot, holder, UPLOAD_SLOT_LEASE_MS).catch((err: unknown) =>
            deps.logger.warn({ err: (err as Error).message }, 'upload slot refresh failed'),
          );
        }, UPLOAD_SLOT_LEASE_MS / 3);
        refresh.unref();
        res.once('close', () => {
          clearInterval(refresh);
          void release();
        });
        next();
      },
      (err: unknown) => {
        discardRest(req);
        next(err);
      },
    );
  };
}

/** How long a slot stays held without a refresh: a dead gateway's uploads free their slots this long after. */
const UPLOAD_SLOT_LEASE_MS = 30_000;

/** What a client refused an upload slot is told to wait: about the time a small upload takes. */
const UPLOAD_SLOT_RETRY_MS = 1_000;
