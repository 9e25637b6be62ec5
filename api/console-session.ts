// The console's browser sessions (docs/api/console.md): an API key is exchanged once, at sign-in,
// for a random session id in an httpOnly, SameSite=Strict cookie (Secure over TLS); the browser
// never holds the key. Postgres holds the id's SHA-256 with the key it stands for and its expiry
// (0130_console_sessions), so every replica honours it and sign-out ends it everywhere.
//
// A request without an Authorization header that carries the cookie is the key it stands for
// (api/auth.ts): the same workspace, owner flag and rate limits, and the key's revocation ends the
// session on its next request (the key is checked through the key cache and listener each time).
// Costs one primary-key read of `console_sessions` per console request; API clients sending a key
// never pay it.
//
// Cross-site requests: SameSite=Strict keeps the cookie off them in every current browser, and a
// state-changing request (anything but GET, HEAD, OPTIONS) authenticated by the cookie must also
// come from the gateway's own origin (its Origin header names the Host it was sent to, and
// Sec-Fetch-Site, when sent, says same-origin), else 403 — for browsers that do not honour SameSite.
import { createHash, randomBytes } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import type { Database } from '../db/index.js';
import { ApiError } from './errors.js';
import { jsonBody } from './body.js';

const SESSION_COOKIE = 'mg_console';
/** How long a session lives from sign-in: a working session, not a remembered login. */
const SESSION_TTL_MS = 8 * 60 * 60 * 1000;

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const hashSessionId = (id: string): string => `sha256:${createHash('sha256').update(id, 'utf8').digest('hex')}`;

/** The session cookie's value, or null when the request carries none (or a malformed one). */
function sessionCookieOf(req: Request): string | null {
  const header = req.headers.cookie;
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) {
      const value = part.slice(eq + 1).trim();
      return /^[A-Za-z0-9_-]{43}$/.test(value) ? value : null;
    }
  }
  return null;
}

/** Refuses a state-changing request whose cookie was sent from another origin (403). */
function refuseCrossSite(req: Request): void {
  if (SAFE_METHODS.has(req.method)) return;
  const fetchSite = req.headers['sec-fetch-site'];
  if (fetchSite !== undefined && fetchSite !== 'same-origin') {
    throw new ApiError(403, 'forbidden', 'a console session cannot be used from another site');
  }
  const origin = req.headers.origin;
  let host: string | null = null;
  try {
    host = origin ? new URL(origin).host : null;
  } catch {
    host = null;
  }
  if (!host || host !== req.headers.host) throw new ApiError(403, 'forbidden', 'a console session cannot be used from another site');
}

function setCookie(req: Request, res: Response, value: string, maxAgeS: number): void {
  const secure = req.secure ? '; Secure' : '';
  res.append('Set-Cookie', `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${maxAgeS}; HttpOnly; SameSite=Strict${secure}`);
}

interface ConsoleSessions {
  /** For api/auth.ts: the key id a cookie-carrying request stands for, null without a cookie; 401 for an ended session, 403 cross-site. */
  sessionKeyOf(req: Request): Promise<string | null>;
  /** POST and DELETE /console/session: sign in with a key, sign out. Who is signed in, the console asks the API. */
  router(verifyKey: (raw: string) => Promise<{ apiKeyId: string; workspaceId: string }>): Router;
}

export function createConsoleSessions(db: Database): ConsoleSessions {
  async function keyOf(sessionId: string): Promise<{ apiKeyId: string; expiresAt: Date } | null> {
    const row = await db
      .selectFrom('console_sessions')
      .select(['api_key_id', 'expires_at'])
      .where('id_hash', '=', hashSessionId(sessionId))
      .where('expires_at', '>', new Date())
      .executeTakeFirst();
    return row ? { apiKeyId: row.api_key_id, expiresAt: row.expires_at } : null;
  }

  async function sessionKeyOf(req: Request): Promise<string | null> {
    const id = sessionCookieOf(req);
    if (!id) return null;
    refuseCrossSite(req);
    const session = await keyOf(id);
    if (!session) throw new ApiError(401, 'unauthorized', 'the console session ended; sign in again');
    return session.apiKeyId;
  }

  async function signIn(req: Request, res: Response, verifyKey: (raw: string) => Promise<{ apiKeyId: string; workspaceId: string }>) {
    refuseCrossSite(req);
    const raw = (req.body as { api_key?: unknown }).api_key;
    if (typeof raw !== 'string' || raw.length === 0 || raw.length > 200)
      throw new ApiError(400, 'invalid_request', 'api_key: an API key (mg_live_…) is required');
    const key = await verifyKey(raw.trim());
    const id = randomBytes(32).toString('base64url');
    const expiresAt = new Date(Date.now() + SESSION_TTL_MS);
    await db.transaction().execute(async (tx) => {
      // The key's ended sessions go as it signs in again: the table holds live sessions and a few ended ones.
      await tx.deleteFrom('console_sessions').where('api_key_id', '=', key.apiKeyId).where('expires_at', '<=', new Date()).execute();
      await tx
        .insertInto('console_sessions')
        .values({ id_hash: hashSessionId(id), api_key_id: key.apiKeyId, expires_at: expiresAt })
        .execute();
    });
    setCookie(req, res, id, Math.floor(SESSION_TTL_MS / 1000));
    res.status(201).json({ data: { api_key_id: key.apiKeyId, workspace_id: key.workspaceId, expires_at: expiresAt.toISOString() } });
  }

  return {
    sessionKeyOf,
    router(verifyKey) {
      const router = Router();
      router.post('/console/session', jsonBody, async (req, res) => signIn(req, res, verifyKey));
      router.delete('/console/session', async (req, res) => {
        refuseCrossSite(req);
        const id = sessionCookieOf(req);
        if (id) await db.deleteFrom('console_sessions').where('id_hash', '=', hashSessionId(id)).execute();
        setCookie(req, res, '', 0);
        res.status(204).end();
      });
      return router;
    },
  };
}
