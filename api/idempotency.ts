// Idempotency-Key on creates and uploads, with payment-API semantics (docs/architecture.md, Decisions):
//
// - The first request with a key claims the (workspace, key) row in Postgres before any work; the
//   primary key is the lock, so it holds across gateway replicas and concurrent requests.
// - A 2xx answer is stored with the claim and replayed (status and body, header
//   `Idempotent-Replayed: true`) to every later request with the same key and the same request for
//   24 h. A job create stores its answer in the same transaction as the job and its charge, so a
//   gateway that dies after committing can never leave a claim that would create a second job.
// - Any other answer (refused or failed request: nothing was created or charged) releases the key:
//   retrying runs the request again.
// - The same key on another endpoint or with another body: 422 `idempotency_key_reused`. While the
//   first request still runs: 409 `idempotency_in_progress`. A claim whose holder stopped refreshing
//   it (a crashed gateway) goes stale after CLAIM_LEASE_MS and the next request with the same key
//   and body takes it over.
//
// "The same request": JSON bodies compare as the sha256 of the endpoint and the canonical JSON (keys
// sorted). A multipart upload is the same when its `project_id`, the file's name and the sha256 of
// its bytes are: the multipart framing (boundary, part order) does not count, since clients draw a
// new boundary on every retry. That fingerprint is known only once the file has streamed, so a
// replay of an upload reads the repeated body through to compare it (nothing is stored).
import { createHash, randomUUID } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import busboy from 'busboy';
import { pipeline } from 'node:stream';
import type { Logger } from 'pino';
import type { Database, Queryable } from '../db/index.js';
import { authOf } from './auth.js';
import { ApiError } from './errors.js';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  findIdempotencyKey,
  refreshIdempotencyKey,
  releaseIdempotencyKey,
  type IdempotencyRow,
} from '../db/repos/idempotency.js';

const IDEMPOTENCY_HEADER = 'idempotency-key';
const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** A claim not refreshed for this long is stale (its gateway died); holders refresh it every third. */
const CLAIM_LEASE_MS = 30_000;
/** Header on a replayed answer. */
const REPLAYED_HEADER = 'Idempotent-Replayed';

type BodyKind = 'json' | 'multipart';

/** How the document states the header on every operation that takes it. */
export const IDEMPOTENCY_NOTE =
  ' Optional `Idempotency-Key` header (1-255 characters, per workspace, 24 h): the same key and request replay the first 2xx answer ' +
  '(`Idempotent-Replayed: true`) without creating or charging again; another request with the key is 422 idempotency_key_reused; ' +
  'while the first still runs, 409 idempotency_in_progress.';

interface Claim {
  workspaceId: string;
  key: string;
  token: string;
  fingerprint: string | null;
  /** Set once the answer is stored (by completeInTx, or by the response itself). */
  completed: boolean;
}

const CLAIM_LOCAL = 'idempotencyClaim';

/**
 * Canonical JSON: object keys sorted at every level, so key order does not change the fingerprint.
 * Iterative (a stack of pieces still to write), so no body can exhaust the call stack here.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  // Either a value still to serialise or literal text; popped in order, so pushed in reverse.
  const todo: Array<{ value: unknown } | string> = [{ value }];
  while (todo.length > 0) {
    const item = todo.pop()!;
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    const v = item.value;
    if (Array.isArray(v)) {
      todo.push(']');
      for (let i = v.length - 1; i >= 0; i--) {
        todo.push({ value: v[i] });
        if (i > 0) todo.push(',');
      }
      todo.push('[');
    } else if (v && typeof v === 'object') {
      const keys = Object.keys(v).sort();
      todo.push('}');
      for (let i = keys.length - 1; i >= 0; i--) {
        todo.push({ value: (v as Record<string, unknown>)[keys[i]!] });
        todo.push(`${JSON.stringify(keys[i])}:`);
        if (i > 0) todo.push(',');
      }
      todo.push('{');
    } else {
      out.push(JSON.stringify(v) ?? 'null');
    }
  }
  return out.join('');
}

const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

function jsonFingerprint(operation: string, body: unknown): string {
  return sha256(`${operation}\n${canonicalJson(body)}`);
}

function multipartFingerprint(operation: string, parts: { projectId: string; fileName: string; fileSha256: string }): string {
  return sha256(`${operation}\n${canonicalJson(parts)}`);
}

/** The Idempotency-Key of a request (undefined without one); 400 when it is empty or too long. */
function idempotencyKeyOf(req: Request): string | undefined {
  const raw = req.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return undefined;
  const key = Array.isArray(raw) ? raw.join(', ') : raw;
  if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new ApiError(400, 'invalid_request', `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
  }
  return key;
}

/**
 * The multipart upload's fingerprint, computed by its route while the file streams (the part's bytes
 * are hashed on the way to storage); stored with the answer.
 */
/** What a multipart upload's fingerprint takes of its parts. */
export interface MultipartFingerprint {
  projectId: string;
  fileName: string;
  fileSha256: string;
}

export function setMultipartFingerprint(res: Response, parts: MultipartFingerprint): void {
  const claim = res.locals[CLAIM_LOCAL] as Claim | undefined;
  if (claim) claim.fingerprint = multipartFingerprint(operationOf(res.req), parts);
}

/** Whether this request holds an Idempotency-Key claim (its answer is stored with its effects). */
export function hasIdempotencyClaim(res: Response): boolean {
  return res.locals[CLAIM_LOCAL] !== undefined;
}

/**
 * For a job create: stores the answer inside the create's transaction. Throws 409 (rolling the
 * transaction back) when the claim is no longer this request's.
 */
export async function completeIdempotencyInTx(tx: Queryable, res: Response, status: number, body: unknown): Promise<void> {
  const claim = res.locals[CLAIM_LOCAL] as Claim | undefined;
  if (!claim) return;
  const ok = await completeIdempotencyKey(tx, { ...claim, status, body });
  if (!ok) throw inProgress();
  claim.completed = true;
}

const operationOf = (req: Request) => `${req.method} ${req.baseUrl}${(req.route as { path: string }).path}`;

const inProgress = () => new ApiError(409, 'idempotency_in_progress', 'a request with this Idempotency-Key is still being processed; retry after it finished');
const reused = () =>
  new ApiError(
    422,
    'idempotency_key_reused',
    'this Idempotency-Key was already used for a different request (another endpoint or body); use a new key for a new request',
  );

/** Watches a repeated upload's transfer rate (api/uploads/limits.ts): calls `cut` when it is too slow; returns the function that stops watching. */
type RateWatch = (req: Request, cut: () => void) => () => void;

/**
 * Reads a repeated multipart upload to its end (storing nothing) and returns its fingerprint, or
 * null when it is malformed, cut or not the same upload. Every stream it touches has an owner: each
 * part stream is listened to for errors and read away, and once the answer is known (a refused
 * part, a truncated or aborted body, too slow) busboy is unpiped and destroyed at once, so nothing
 * is left attached to the request for the caller's bounded drain to meet.
 */
function fingerprintOfMultipart(req: Request, operation: string, maxFileBytes: number, watch?: RateWatch, slow?: () => ApiError): Promise<string | null> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, limits: { files: 1, fields: 4, parts: 6, fieldSize: 1024, fileSize: maxFileBytes } });
    } catch {
      return resolve(null);
    }
    let done = false;
    let stopWatch = (): void => undefined;
    const finish = (result: string | null | ApiError) => {
      if (done) return;
      done = true;
      stopWatch();
      if (typeof result === 'string') return resolve(result);
      req.unpipe(bb);
      // Destroyed on the next turn: the answer can be decided inside busboy's own write.
      setImmediate(() => bb.destroy());
      if (result instanceof ApiError) reject(result);
      else resolve(null);
    };
    if (watch) stopWatch = watch(req, () => finish(slow?.() ?? null));
    let projectId: string | undefined;
    let file: { name: string; hash: Promise<string | null> } | undefined;
    bb.on('field', (name, value) => {
      if (name === 'project_id' && projectId === undefined) projectId = value.trim();
      else finish(null);
    });
    bb.on('file', (name, stream, info) => {
      stream.on('error', () => undefined);
      if (name !== 'file' || file) {
        stream.resume();
        return finish(null);
      }
      const hash = createHash('sha256');
      file = {
        name: info.filename ?? '',
        hash: new Promise((settle) => {
          stream.on('data', (c: Buffer) => hash.update(c));
          stream.on('end', () => settle(hash.digest('hex')));
          stream.on('error', () => settle(null));
          stream.on('limit', () => finish(null));
        }),
      };
    });
    const tooMany = () => finish(null);
    bb.on('filesLimit', tooMany);
    bb.on('fieldsLimit', tooMany);
    bb.on('partsLimit', tooMany);
    bb.on('close', () => {
      if (done) return;
      if (!file || projectId === undefined) return finish(null);
      const name = file.name;
      const p = projectId;
      void file.hash.then((fileSha256) => finish(fileSha256 === null ? null : multipartFingerprint(operation, { projectId: p, fileName: name, fileSha256 })));
    });
    bb.on('error', () => finish(null));
    req.on('aborted', () => finish(null));
    pipeline(req, bb, () => undefined);
  });
}

interface IdempotencyDeps {
  db: Database;
  logger: Logger;
}

/**
 * Middleware for a create route (after authentication, rate limit and, for JSON, the body parser):
 * without an Idempotency-Key it does nothing; with one it claims, replays or refuses as described
 * at the top of this file. `discard` reads away an unread request body before an early answer
 * (multipart uploads); `maxMultipartBytes` bounds the size of a repeated upload's read and
 * `watchRate` its pace (`tooSlow` is the answer when it trickles).
 */
export function idempotent(
  deps: IdempotencyDeps,
  opts: { body: BodyKind; discard?: (req: Request) => void; maxMultipartBytes?: number; watchRate?: RateWatch; tooSlow?: () => ApiError },
): RequestHandler {
  return (req, res, next) => {
    void handle(req, res).then(
      (proceed) => (proceed ? next() : undefined),
      (err: unknown) => {
        if (opts.body === 'multipart') opts.discard?.(req);
        next(err);
      },
    );
  };

  async function handle(req: Request, res: Response): Promise<boolean> {
    const key = idempotencyKeyOf(req);
    if (key === undefined) return true;
    const { workspaceId } = authOf(res);
    const operation = operationOf(req);
    const fingerprint = opts.body === 'json' ? jsonFingerprint(operation, req.body) : null;
    const token = randomUUID();
    // A row released between our failed claim and the read: claim again (a few times at most).
    for (let attempt = 0; attempt < 3; attempt++) {
      if (await claimIdempotencyKey(deps.db, { workspaceId, key, operation, fingerprint, token, leaseMs: CLAIM_LEASE_MS })) {
        hold(res, { workspaceId, key, token, fingerprint, completed: false });
        return true;
      }
      const row = await findIdempotencyKey(deps.db, workspaceId, key);
      if (!row) continue;
      await answerExisting(req, res, row, operation, fingerprint);
      return false;
    }
    throw inProgress();
  }

  async function answerExisting(req: Request, res: Response, row: IdempotencyRow, operation: string, fingerprint: string | null): Promise<void> {
    if (row.operation !== operation) throw reused();
    if (row.status === 'in_progress') {
      if (fingerprint !== null && row.fingerprint !== null && row.fingerprint !== fingerprint) throw reused();
      throw inProgress();
    }
    let theirs = fingerprint;
    if (theirs === null) theirs = await fingerprintOfMultipart(req, operation, opts.maxMultipartBytes ?? 25 * 1024 * 1024, opts.watchRate, opts.tooSlow);
    if (theirs === null || theirs !== row.fingerprint) throw reused();
    res.setHeader(REPLAYED_HEADER, 'true');
    res.status(row.response_status ?? 200).json(row.response_body);
  }

  /** Owns the claim for this request: refreshes it while it runs, stores a 2xx answer, releases it otherwise. */
  function hold(res: Response, claim: Claim): void {
    res.locals[CLAIM_LOCAL] = claim;
    const refresh = setInterval(() => {
      refreshIdempotencyKey(deps.db, claim).catch((err: unknown) => deps.logger.warn({ err: (err as Error).message }, 'idempotency claim refresh failed'));
    }, CLAIM_LEASE_MS / 3);
    refresh.unref();
    let settled = false;
    const release = (): Promise<void> => {
      if (settled) return Promise.resolve();
      settled = true;
      clearInterval(refresh);
      if (claim.completed) return Promise.resolve();
      return releaseIdempotencyKey(deps.db, claim).then(
        () => undefined,
        (err: unknown) => deps.logger.warn({ err: (err as Error).message }, 'idempotency claim release failed'),
      );
    };
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      if (settled || claim.completed) return json(body);
      if (res.statusCode < 200 || res.statusCode >= 300) {
        // Released before it is sent: a client retrying right after a refusal finds the key free.
        void release().finally(() => json(body));
        return res;
      }
      settled = true;
      clearInterval(refresh);
      // Stored before it is sent: a client that got the answer always finds it on a retry.
      completeIdempotencyKey(deps.db, { ...claim, status: res.statusCode, body })
        .then((ok) => {
          claim.completed = ok;
        })
        .catch((err: unknown) => deps.logger.warn({ err: (err as Error).message }, 'storing an idempotent answer failed'))
        .finally(() => json(body));
      return res;
    };
    // The connection ended without an answer through res.json: give the key up.
    res.on('close', () => void release());
  }
}
