// Bearer-key authentication and per-key rate limits.
//
// Key lookups are cached for a few seconds, and only while this process LISTENs on
// `api_key_revoked` (api/key-listener.ts; revokeApiKey notifies in the revoking transaction): a
// notification evicts the key at once, and while the listener is down the cache is bypassed, so a
// lost connection never serves a stale entry. Each rate-limit lease re-checks `revoked_at` too (api/rate-limit.ts).
// `last_used_at` is written in one batched update every few seconds, not once per request.
//
// Unknown keys are answered from memory: the same connection also LISTENs on `api_key_created`
// (createApiKey notifies in the creating transaction) and, on every (re)connect, loads the ids of
// the live keys. While that set is loaded, a key id outside it is refused without a query, so a
// flood of random well-formed keys costs no Postgres round trip. It is a negative cache covering
// every unknown id at once: bounded (past KNOWN_IDS_MAX live keys it is not used), refreshed on
// every reconnect, and a new key is known as soon as its creation's notification arrives.
//
// A notification arrives a moment after its transaction commits, so an answer from memory (a cached
// key, or an id refused as unknown) first waits for a round trip on the listening connection that
// started after the request arrived: Postgres delivers every notification committed before that
// round trip ahead of its result. A key revoked before a request is therefore refused by it, and a
// key created before a request is accepted by it, on every replica. The round trip is `select 1`
// on the listener's own connection, shared by every request waiting at the time (one in flight,
// one queued behind it), so it adds about one round trip of latency and almost no database work.
// For a cached key that round trip is left to the endpoint (confirmKey, run before its rate limit
// and handler): an endpoint whose own statement reads the key's revocation in the same snapshot as
// its data (the status poll: db/repos/queue.ts jobForStatusRead) skips it, so the API's hottest path
// is one statement; when that statement finds nothing it confirms the key before answering 404.
//
// A key is an owner key while the member who created it (`api_keys.created_by`) is an owner of its
// workspace (`workspace_members.role`): read with the key, cached with it. A role change sends no
// notification, so a demoted owner's key keeps owner access (GET /v1/audit-events) for at most
// CACHE_TTL_MS (5 s) on a replica that cached it; a revocation still ends it at once.
//
// A key's rules (0105_scoped_keys: scopes, allowed models / kinds / IPs, expiry) are read in the same
// statement as the key and cached with it, so they cost no query: an expired key is refused (401) and
// a key presented from outside its allowed_ips (403 key_scope_denied) here, before any endpoint runs;
// each endpoint's declared scope is checked by keyScopeCheck, the create's model and kind by the
// create (keyCreateCheck). Rules are fixed at a key's creation, so a cached copy is never stale.
import { sql } from 'kysely';
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import type { Database } from '../db/index.js';
import { parseApiKey, secretMatches } from '../db/api-keys.js';
import { ApiError } from './errors.js';
import type { ApiMetrics } from './metrics.js';
import type { Config } from '../shared/config.js';
import { createRateLimiter, type RateClass } from './rate-limit.js';
import { createKeyListener, KNOWN_IDS_MAX } from './key-listener.js';
import { addressRefusal, createRefusalOf, rulesOf, scopeRefusal, type ApiKeyScope, type KeyRules, type RuleRefusal } from '../shared/api-key-rules.js';

export { CREATION_CHANNEL, KEY_LISTENER_NAME, REVOCATION_CHANNEL } from './key-listener.js';

export type { RateClass } from './rate-limit.js';

interface AuthContext {
  workspaceId: string;
  apiKeyId: string;
  /** Its creator is an owner of the workspace now (within CACHE_TTL_MS): owner-only endpoints answer it. */
  owner: boolean;
  /** The key's rules (NO_RULES for a key without any): what it may call and create. */
  rules: KeyRules;
}

export interface Auth {
  middleware: RequestHandler;
  /** Checks a presented API key as a request would (401 unless live); the console's sign-in exchanges it for a session. */
  verifyKey(raw: string): Promise<{ apiKeyId: string; workspaceId: string }>;
  rateLimit(cls: RateClass): RequestHandler;
  close(): Promise<void>;
}

const CACHE_TTL_MS = 5_000;
const CACHE_REFRESH_AHEAD_MS = CACHE_TTL_MS / 2;
const CACHE_MAX_ENTRIES = 10_000;
const LAST_USED_FLUSH_MS = 10_000;

/** res.locals' slot for the confirmation of a key answered from the cache (confirmKey). */
const UNCONFIRMED = 'authUnconfirmed';

/**
 * Confirms a key the middleware answered from its cache: waits for the key listener's sync (or asks
 * Postgres), so a key revoked before the request is refused (401) by it. Every endpoint runs it
 * before its rate limit and handler (api/endpoint.ts) unless its own statement reads the key's
 * revocation; such a handler runs it when that statement found nothing. At most once per request.
 */
export async function confirmKey(res: Response): Promise<void> {
  const confirm = res.locals[UNCONFIRMED] as (() => Promise<unknown>) | undefined;
  if (!confirm) return;
  res.locals[UNCONFIRMED] = undefined;
  await confirm();
}

/** The secret the request presented, kept out of res.locals: only minting and revoking keys passes it on (to Postgres). */
const presented = new WeakMap<Response, string>();

/** The presented key's secret (the key-management functions check it in the database: 0105_scoped_keys). */
export function presentedSecret(res: Response): string {
  const secret = presented.get(res);
  if (secret === undefined) throw new ApiError(401, 'unauthorized', 'missing API key');
  return secret;
}

/** 403 key_scope_denied naming the scope or rule. */
export function keyScopeDenied(refusal: RuleRefusal): ApiError {
  return new ApiError(403, 'key_scope_denied', refusal.message, { rule: refusal.rule });
}

/**
 * Middleware refusing a key without `scope` (403 key_scope_denied), from memory. A refused key that
 * was answered from the cache is confirmed first, so a revoked key still answers 401.
 */
export function keyScopeCheck(scope: ApiKeyScope): RequestHandler {
  return (_req, res, next) => {
    const refusal = scopeRefusal(authOf(res).rules, scope);
    if (!refusal) return next();
    confirmKey(res).then(() => next(keyScopeDenied(refusal)), next);
  };
}

/** Throws 403 key_scope_denied when the key may not create a `kind` job with `model` (its allowed_kinds / allowed_models). */
export function keyCreateCheck(res: Response, kind: string, model: unknown): void {
  const refusal = createRefusalOf(authOf(res).rules, kind, typeof model === 'string' ? model : undefined);
  if (refusal) throw keyScopeDenied(refusal);
}

export function authOf(res: Response): AuthContext {
  const auth = res.locals.auth as AuthContext | undefined;
  if (!auth) throw new ApiError(401, 'unauthorized', 'missing API key');
  return auth;
}

interface CachedKey {
  workspaceId: string;
  secretHash: string;
  owner: boolean;
  rules: KeyRules;
  expiresAt: number;
}

interface AuthDeps {
  db: Database;
  /** The rate limiter's own small pool (fails fast); defaults to `db`. */
  limiterDb?: Database;
  config: Config;
  metrics: ApiMetrics;
  logger?: Logger;
  /** A key was revoked (its notification, or a lease that found it revoked): end what it holds open. */
  onKeyRevoked?(keyId: string): void;
  /** The live key ids loaded after the listener (re)connected: whatever holds another key ends. */
  onLiveKeys?(ids: ReadonlySet<string>): void;
  /** A request without an Authorization header that carries a console session: the key id it stands for (api/console-session.ts). */
  sessionKeyOf?(req: Request): Promise<string | null>;
}

export function createAuth(deps: AuthDeps): Auth {
  const cache = new Map<string, CachedKey>();
  // Ids of live keys, or null while unknown (listener down, or too many keys to hold).
  let knownIds: Set<string> | null = null;
  const listener = createKeyListener(deps.config.DATABASE_URL, deps.logger, {
    onRevoked: (keyId) => {
      cache.delete(keyId);
      knownIds?.delete(keyId);
      deps.onKeyRevoked?.(keyId);
    },
    onCreated: (keyId) => {
      knownIds?.add(keyId);
      if (knownIds && knownIds.size > KNOWN_IDS_MAX) knownIds = null;
    },
    onLoaded: (ids) => {
      knownIds = ids && ids.length <= KNOWN_IDS_MAX ? new Set(ids) : null;
      if (knownIds) deps.onLiveKeys?.(knownIds);
    },
    // Anything cached while we were deaf may be stale.
    onStateChange: () => {
      cache.clear();
      knownIds = null;
    },
  });
  const lastUsed = createLastUsedRecorder(deps.db, deps.logger);

  /** What memory can answer for a key id: the cached key, null for an unknown id, undefined for "ask Postgres". */
  function fromMemory(keyId: string, now: number): CachedKey | null | undefined {
    if (!listener.healthy()) return undefined;
    const hit = cache.get(keyId);
    if (hit && hit.expiresAt > now) return hit;
    if (knownIds && !knownIds.has(keyId)) return null;
    return undefined;
  }

  async function lookup(keyId: string): Promise<CachedKey | null> {
    const now = Date.now();
    // Answer from memory only after the notifications committed before this request are applied.
    if (fromMemory(keyId, now) !== undefined && (await listener.sync())) {
      const known = fromMemory(keyId, now);
      if (known === null) deps.metrics.authLookup('memory');
      if (known !== undefined) return known;
    }
    return fromDatabase(keyId, now);
  }

  /** Reads the key from Postgres and caches it unless a notification or reconnect raced the read. */
  async function fromDatabase(keyId: string, now: number): Promise<CachedKey | null> {
    deps.metrics.authLookup('database');
    const generation = listener.generation();
    const row = await deps.db
      .selectFrom('api_keys as k')
      .leftJoin('workspace_members as m', (j) => j.onRef('m.workspace_id', '=', 'k.workspace_id').onRef('m.email', '=', 'k.created_by'))
      .select(['k.workspace_id', 'k.secret_hash', 'k.revoked_at', 'm.role', 'k.scopes', 'k.allowed_models', 'k.allowed_kinds', 'k.expires_at'])
      .select(sql<string[] | null>`k.allowed_ips::text[]`.as('allowed_ips'))
      .where('k.id', '=', keyId)
      .executeTakeFirst();
    if (!row || row.revoked_at) {
      cache.delete(keyId);
      return null;
    }
    const entry = {
      workspaceId: row.workspace_id,
      secretHash: row.secret_hash,
      owner: row.role === 'owner',
      rules: rulesOf(row),
      expiresAt: now + CACHE_TTL_MS,
    };
    // Only cache when no notification or reconnect happened while we were reading.
    if (listener.healthy() && listener.generation() === generation) {
      if (cache.size >= CACHE_MAX_ENTRIES) cache.delete(cache.keys().next().value!);
      cache.set(keyId, entry);
    }
    return entry;
  }

  // A key in use is read again in the background (one read per key at a time) during the last
  // CACHE_REFRESH_AHEAD_MS (half) of its entry, so a busy key's entry is replaced before it expires: its
  // requests never all miss at once and each ask Postgres. The owner flag stays at most
  // CACHE_TTL_MS old (the new entry's clock starts before its read).
  const refreshing = new Set<string>();
  const refreshAhead = (keyId: string, hit: CachedKey, now: number) => {
    if (hit.expiresAt - now > CACHE_REFRESH_AHEAD_MS || refreshing.has(keyId)) return;
    refreshing.add(keyId);
    fromDatabase(keyId, now)
      .catch(() => undefined)
      .finally(() => refreshing.delete(keyId));
  };

  /** The key, as the listener's sync (or Postgres) confirms it now; throws the 401. */
  const confirmed = async (parsed: { id: string; secret: string }): Promise<CachedKey> => {
    const key = await lookup(parsed.id);
    // Same message for unknown, revoked and wrong secret: no oracle for key ids.
    if (!key || !secretMatches(parsed.secret, key.secretHash)) throw new ApiError(401, 'unauthorized', 'invalid or revoked API key');
    return key;
  };

  /** A console session's key, confirmed now through the listener's sync or Postgres (a revoked key ends the session). */
  const sessionAuth = async (keyId: string, req: Request, res: Response): Promise<void> => {
    const key = await lookup(keyId);
    if (!key) throw new ApiError(401, 'unauthorized', 'the session ended: its API key was revoked');
    // A session is its key: the key's scopes, models, networks and expiry bind it too.
    refuseByRules(key.rules, req.ip, Date.now());
    res.locals.auth = { workspaceId: key.workspaceId, apiKeyId: keyId, owner: key.owner, rules: key.rules } satisfies AuthContext;
    lastUsed.touch(keyId);
  };

  const middleware: RequestHandler = async (req, res, next) => {
    try {
      const header = req.headers.authorization;
      if (!header) {
        const sessionKey = await deps.sessionKeyOf?.(req);
        if (sessionKey) {
          await sessionAuth(sessionKey, req, res);
          return next();
        }
      }
      if (!header) throw new ApiError(401, 'unauthorized', 'missing Authorization header; send "Authorization: Bearer <API key>"');
      const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
      if (!m) throw new ApiError(401, 'unauthorized', 'Authorization header must use the Bearer scheme');
      const parsed = parseApiKey(m[1]!);
      if (!parsed) throw new ApiError(401, 'unauthorized', 'malformed API key');
      // A cached key is used at once; its confirmation (the listener's sync round trip, which
      // applies a revocation committed before this request) is left to confirmKey, which every
      // endpoint runs first unless its own statement reads the key's revocation (api/endpoint.ts).
      const hit = listener.healthy() ? cache.get(parsed.id) : undefined;
      const now = Date.now();
      let key: CachedKey;
      if (hit && hit.expiresAt > now && secretMatches(parsed.secret, hit.secretHash)) {
        key = hit;
        refreshAhead(parsed.id, hit, now);
        res.locals[UNCONFIRMED] = () => confirmed(parsed);
      } else {
        key = await confirmed(parsed);
      }
      refuseByRules(key.rules, req.ip, now);
      res.locals.auth = { workspaceId: key.workspaceId, apiKeyId: parsed.id, owner: key.owner, rules: key.rules } satisfies AuthContext;
      presented.set(res, parsed.secret);
      lastUsed.touch(parsed.id);
      next();
    } catch (err) {
      next(err);
    }
  };

  const limiter = createRateLimiter({
    db: deps.limiterDb ?? deps.db,
    limits: {
      poll: deps.config.RATE_LIMIT_POLL_PER_MIN,
      generate: deps.config.RATE_LIMIT_GENERATE_PER_MIN,
      redeliver: deps.config.RATE_LIMIT_REDELIVER_PER_MIN,
    },
    windowMs: deps.config.RATE_LIMIT_WINDOW_MS,
    onRefused: (cls: RateClass) => deps.metrics.rateLimited(cls),
    onRevoked: (keyId: string) => {
      cache.delete(keyId);
      knownIds?.delete(keyId);
      deps.onKeyRevoked?.(keyId);
    },
    onUnavailable: (err) => deps.logger?.warn({ err: { message: (err as Error).message } }, 'rate limiter: lease failed; refusing with 503'),
  });
  const limiters: Record<RateClass, RequestHandler> = {
    poll: limiter.middleware('poll'),
    generate: limiter.middleware('generate'),
    redeliver: limiter.middleware('redeliver'),
  };

  return {
    middleware,
    async verifyKey(raw) {
      const parsed = parseApiKey(raw);
      if (!parsed) throw new ApiError(401, 'unauthorized', 'malformed API key');
      const key = await confirmed(parsed);
      return { apiKeyId: parsed.id, workspaceId: key.workspaceId };
    },
    rateLimit: (cls) => limiters[cls],
    async close() {
      await listener.close();
      await lastUsed.close();
      cache.clear();
    },
  };
}

/** An expired key answers 401, a key presented from outside its allowed_ips 403 (both from memory). */
function refuseByRules(rules: KeyRules, address: string | undefined, now: number): void {
  if (rules.expiresAt !== null && rules.expiresAt <= now) {
    throw new ApiError(401, 'unauthorized', `API key expired at ${new Date(rules.expiresAt).toISOString()}`);
  }
  const refusal = addressRefusal(rules, address);
  if (refusal) throw keyScopeDenied(refusal);
}

/** Remembers when each key was last used and writes them all in one statement periodically. */
function createLastUsedRecorder(db: Database, logger: Logger | undefined) {
  let pending = new Map<string, Date>();
  let flushing: Promise<void> = Promise.resolve();

  const flush = async () => {
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    const rows = [...batch].map(([id, at]) => sql`(${id}, ${at.toISOString()}::timestamptz)`);
    try {
      await sql`
        update api_keys k set last_used_at = greatest(k.last_used_at, v.used_at)
          from (values ${sql.join(rows)}) as v(id, used_at)
         where k.id = v.id
      `.execute(db);
    } catch (err) {
      logger?.warn({ err: { message: (err as Error).message } }, 'could not record API key last use');
    }
  };

  const timer = setInterval(() => {
    flushing = flushing.then(flush);
  }, LAST_USED_FLUSH_MS);
  timer.unref();

  return {
    touch(id: string) {
      pending.set(id, new Date());
    },
    async close() {
      clearInterval(timer);
      flushing = flushing.then(flush);
      await flushing;
    },
  };
}
