// The gateway process's last resort for an error nothing else caught (`uncaughtException`,
// `unhandledRejection`). The rule:
//
// - An error attributable to one request (thrown by a listener of its request or response stream,
//   or in its context while it is still being answered: its middleware, handlers and promises) ends
//   that request (500 in the error shape if nothing was sent yet, else the socket is cut) and the
//   process keeps serving: the state such an error can leave behind is the request's own. However
//   many there are, they never stop the process. A process-wide budget of request errors would let
//   one tenant who found a request-scoped error stop every replica by sending it 21 times; a budget
//   per workspace could only end that workspace's requests, which the per-request rule already
//   does. What a flood of them still costs is log volume, so each workspace (each client address
//   before authentication) logs at most LOGGED_REQUEST_ERRORS_PER_MINUTE of them a minute and the
//   next logged line counts what was left out.
// - Anything else (a timer, a pool, a listener outside any request) is fatal: logged, then the
//   process stops gracefully and exits non-zero so its supervisor restarts it.
//
// The log line holds the error's name, message and stack with bearer tokens redacted
// (shared/redact.ts), the request id, method and route pattern; never the raw path (an upload's
// /media/ path is its bearer token), the error's other properties (body-parser attaches the raw
// body) or the request's headers.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { errorBody } from './errors.js';
import { redactedError } from '../shared/redact.js';

interface RequestScope {
  req: IncomingMessage;
  res: ServerResponse & { locals?: Record<string, unknown> };
}

const requestScope = new AsyncLocalStorage<RequestScope>();
/** Set on an error thrown by a request's stream listener (the scope is gone by the time it is reported). */
const scopeOfError = Symbol('requestScope');

/** Request errors one workspace (or unauthenticated client address) gets logged per minute; the rest are counted. */
export const LOGGED_REQUEST_ERRORS_PER_MINUTE = 20;

/** Runs an emitter's listeners inside the request's scope, tagging what they throw with it. */
function scopeEmits(emitter: EventEmitter, scope: RequestScope): void {
  const emit = emitter.emit;
  emitter.emit = function (this: EventEmitter, ...args: Parameters<EventEmitter['emit']>) {
    return requestScope.run(scope, () => {
      try {
        return emit.apply(this, args);
      } catch (err) {
        if (err && typeof err === 'object' && Object.isExtensible(err) && !(scopeOfError in err)) Object.defineProperty(err, scopeOfError, { value: scope });
        throw err;
      }
    });
  } as EventEmitter['emit'];
}

/**
 * First middleware of the app: the rest of the request runs inside its scope, and so do the
 * listeners of its request and response streams (body parsers, multipart, uploads), which Node
 * calls from the socket's own context.
 */
export const scopeRequest: RequestHandler = (req, res, next) => {
  const scope: RequestScope = { req, res };
  scopeEmits(req, scope);
  scopeEmits(res, scope);
  requestScope.run(scope, next);
};

/**
 * The request an error belongs to: the one whose stream listener threw it, else the one whose
 * context it ran in while that request is still being answered. A timer or a promise a request
 * merely started, failing after its answer was sent, is no longer that request's: it is fatal.
 */
function scopeOf(err: unknown): RequestScope | undefined {
  const tagged = err && typeof err === 'object' ? (err as { [scopeOfError]?: RequestScope })[scopeOfError] : undefined;
  if (tagged) return tagged;
  const current = requestScope.getStore();
  return current && !current.res.writableFinished && !current.res.destroyed ? current : undefined;
}

function describe(err: unknown): Record<string, unknown> {
  if (err instanceof Error) return redactedError(err);
  return { type: typeof err, ...redactedError(String(err).slice(0, 200)) };
}

/**
 * The route a request matched (`/v1/jobs/:id`), or, before routing, its first two path segments:
 * a raw path may be a bearer (an upload's `/media/uploads/<token>`) or name a tenant's ids.
 */
function routeOf(req: IncomingMessage): string {
  const routed = req as IncomingMessage & { baseUrl?: string; route?: { path?: unknown } };
  if (typeof routed.route?.path === 'string') return `${routed.baseUrl ?? ''}${routed.route.path}`;
  const segments = (req.url ?? '').split('?')[0]!.split('/');
  return segments.length > 3 ? `${segments.slice(0, 3).join('/')}/…` : segments.join('/');
}

/** Whose request it was, for the log budget: its workspace once authenticated, else its client address. */
function ownerOf({ req, res }: RequestScope): string {
  const auth = res.locals?.auth as { workspaceId?: string } | undefined;
  return auth?.workspaceId ?? `addr:${req.socket?.remoteAddress ?? 'unknown'}`;
}

function endRequest({ req, res }: RequestScope): void {
  if (res.headersSent || res.writableEnded) {
    res.destroy();
    req.destroy();
    return;
  }
  const requestId = String(res.locals?.requestId ?? 'unknown');
  // The connection's parser or body stream may be mid-message: close it after this answer.
  res.statusCode = 500;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Connection', 'close');
  res.end(JSON.stringify(errorBody('internal_error', `internal error (request id ${requestId})`)));
}

interface LastResortOptions {
  logger: Logger;
  /** Called once for a fatal error: stop gracefully and exit non-zero. */
  onFatal(err: unknown): void;
  now?: () => number;
}

/** The handler itself (installLastResort registers it on the process). */
export function createLastResort(opts: LastResortOptions): (err: unknown, origin: string) => void {
  const now = opts.now ?? Date.now;
  /** Per owner: the minute its budget counts in, lines logged in it, errors left out of the log. */
  const budgets = new Map<string, { minute: number; logged: number; suppressed: number }>();
  let fatal = false;
  return (err, origin) => {
    if (fatal) return;
    const scope = scopeOf(err);
    if (scope) {
      const { req, res } = scope;
      const minute = Math.floor(now() / 60_000);
      const owner = ownerOf(scope);
      // Owners of earlier minutes are dropped, so the map holds only this minute's.
      for (const [key, b] of budgets) if (b.minute !== minute) budgets.delete(key);
      const budget = budgets.get(owner) ?? { minute, logged: 0, suppressed: 0 };
      budgets.set(owner, budget);
      if (budget.logged < LOGGED_REQUEST_ERRORS_PER_MINUTE) {
        budget.logged++;
        opts.logger.error(
          { err: describe(err), origin, requestId: res.locals?.requestId, method: req.method, route: routeOf(req), notLoggedThisMinute: budget.suppressed },
          'uncaught error in a request: that request was ended, the process keeps serving',
        );
        budget.suppressed = 0;
      } else {
        budget.suppressed++;
      }
      try {
        endRequest(scope);
      } catch {
        req.socket?.destroy();
      }
      return;
    }
    fatal = true;
    opts.logger.fatal({ err: describe(err), origin }, 'uncaught error outside any request: stopping');
    opts.onFatal(err);
  };
}

/** Registers the last resort on the process (the gateway process only; tests build the app without it). */
export function installLastResort(opts: LastResortOptions): void {
  const handle = createLastResort(opts);
  process.on('uncaughtException', (err, origin) => handle(err, origin));
  process.on('unhandledRejection', (reason) => handle(reason, 'unhandledRejection'));
}
