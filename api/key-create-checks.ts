// The key's allowed_kinds / allowed_models over the creates a body lists (a pipeline's steps, a
// batch's items), before the body is validated.
import type { RequestHandler } from 'express';
import { keyCreateCheck } from './auth.js';

type Entry = { kind?: unknown; body?: { model?: unknown; steps?: unknown } } | null;

/** Each create of `list` against the key; a batch's pipeline item (`kind: pipeline`) by its steps. */
function checkList(res: Parameters<RequestHandler>[1], list: unknown, nested = false): void {
  if (!Array.isArray(list)) return;
  for (const entry of list as Entry[]) {
    if (entry?.kind === 'pipeline' && !nested) checkList(res, entry.body?.steps, true);
    else if (typeof entry?.kind === 'string') keyCreateCheck(res, entry.kind, entry.body?.model);
  }
}

/**
 * Middleware checking each create of a list in the body (a pipeline's `steps`, a batch's `items`:
 * `{ kind, body: { model } }`, a pipeline item's steps) against the key's allowed_kinds /
 * allowed_models (403 key_scope_denied); the rest of the body is validated later.
 */
export function keyCreateListCheck(field: string): RequestHandler {
  return (req, res, next) => {
    try {
      checkList(res, (req.body as Record<string, unknown> | undefined)?.[field]);
    } catch (err) {
      return next(err);
    }
    next();
  };
}
