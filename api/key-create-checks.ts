// The key's allowed_kinds / allowed_models over the creates a body lists (a pipeline's steps, a
// batch's items), before the body is validated.
import type { RequestHandler } from 'express';
import { keyCreateCheck } from './auth.js';

/**
 * Middleware checking each create of a list in the body (a pipeline's `steps`, a batch's `items`:
 * `{ kind, body: { model } }`) against the key's allowed_kinds / allowed_models (403
 * key_scope_denied); the rest of the body is validated later.
 */
export function keyCreateListCheck(field: string): RequestHandler {
  return (req, res, next) => {
    const list: unknown = (req.body as Record<string, unknown> | undefined)?.[field];
    try {
      if (Array.isArray(list))
        for (const entry of list as Array<{ kind?: unknown; body?: { model?: unknown } } | null>) {
          if (typeof entry?.kind === 'string') keyCreateCheck(res, entry.kind, entry.body?.model);
        }
    } catch (err) {
      return next(err);
    }
    next();
  };
}
