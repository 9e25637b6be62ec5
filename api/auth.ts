// Bearer-key authentication and per-key rate limits.
// MINIMAL VERSION — the gateway issue replaces this with the cached, LISTEN/NOTIFY-invalidated
// lookup, throttled last_used_at and the Postgres-backed rate limiter.
import type { RequestHandler, Response } from 'express';
import type { Database } from '../db/index.js';
import { parseApiKey, secretMatches } from '../db/api-keys.js';
import { ApiError } from './errors.js';
import type { ApiMetrics } from './metrics.js';
import type { Config } from '../worker/config.js';

export interface AuthContext {
  workspaceId: string;
  apiKeyId: string;
}

export type RateClass = 'poll' | 'generate';

export interface Auth {
  middleware: RequestHandler;
  rateLimit(cls: RateClass): RequestHandler;
  close(): Promise<void>;
}

export function authOf(res: Response): AuthContext {
  const auth = res.locals.auth as AuthContext | undefined;
  if (!auth) throw new ApiError(401, 'unauthorized', 'missing API key');
  return auth;
}

export function createAuth(deps: { db: Database; config: Config; metrics: ApiMetrics }): Auth {
  const middleware: RequestHandler = async (req, res, next) => {
    try {
      const header = req.headers.authorization;
      const m = header ? /^Bearer (\S+)$/.exec(header) : null;
      const parsed = m ? parseApiKey(m[1]!) : null;
      if (!parsed) throw new ApiError(401, 'unauthorized', 'missing or malformed API key');
      const key = await deps.db
        .selectFrom('api_keys')
        .select(['id', 'workspace_id', 'secret_hash', 'revoked_at'])
        .where('id', '=', parsed.id)
        .executeTakeFirst();
      if (!key || key.revoked_at || !secretMatches(parsed.secret, key.secret_hash)) {
        throw new ApiError(401, 'unauthorized', 'invalid or revoked API key');
      }
      res.locals.auth = { workspaceId: key.workspace_id, apiKeyId: key.id } satisfies AuthContext;
      next();
    } catch (err) {
      next(err);
    }
  };
  return {
    middleware,
    rateLimit: () => (_req, _res, next) => next(),
    close: async () => undefined,
  };
}
