// The gateway process's last resort for an error nothing else caught (`uncaughtException`,
// `unhandledRejection`). The rule:
//
// - An error attributable to one request (thrown by a listener of its request or response stream,
//   or in its context while it is still being answered: its middleware, handlers and promises) ends
//   that request (500 in the error shape if nothing was sent yet, else the socket is cut) and the
//   process keeps serving: the state such an error can leave behind is the request's own.
// - Anything else (a timer, a pool, a listener outside any request), or more than
//   MAX_REQUEST_ERRORS_PER_MINUTE request errors in a minute (something is wrong beyond one
//   request), is fatal: logged, then the process stops gracefully and exits non-zero so its
//   supervisor restarts it.
//
// The log line holds the error's name, message and stack, the request id, method and route path;
// never the error's other properties (body-parser attaches the raw body) or the request's headers.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { errorBody } from './errors.js';

interface RequestScope {
  req: IncomingMessage;
  res: ServerResponse & { locals?: Record<string, unknown> };
}

const requestScope = new AsyncLocalStorage<RequestScope>();
/** Set on an error thrown by a request's stream listener (the scope is gone by the time it is reported). */
const scopeOfError = Symbol('requestScope');

export const MAX_REQUEST_ERRORS_PER_MINUTE = 20;

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
  if (err instanceof Error) return { type: err.name, message: err.message, stack: err.stack };
  return { type: typeof err, message: String(err).slice(0, 200) };
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

export interface LastResortOptions {
  logger: Logger;
  /** Called once for a fatal error: stop gracefully and exit non-zero. */
  onFatal(err: unknown): void;
  now?: () => number;
}

/** The handler itself (installLastResort registers it on the process). */
export function createLastResort(opts: LastResortOptions): (err: unknown, origin: string) => void {
  const now = opts.now ?? Date.now;
  let recent: number[] = [];
  let fatal = false;
  return (err, origin) => {
    const scope = scopeOf(err);
    if (scope && !fatal) {
      const t = now();
      recent = recent.filter((at) => at > t - 60_000);
      recent.push(t);
      if (recent.length <= MAX_REQUEST_ERRORS_PER_MINUTE) {
        const { req, res } = scope;
        opts.logger.error(
          { err: describe(err), origin, requestId: res.locals?.requestId, method: req.method, path: (req.url ?? '').split('?')[0] },
          'uncaught error in a request: that request was ended, the process keeps serving',
        );
        try {
          endRequest(scope);
        } catch {
          req.socket?.destroy();
        }
        return;
      }
    }
    if (fatal) return;
    fatal = true;
    opts.logger.fatal(
      { err: describe(err), origin, requestErrorsLastMinute: recent.length },
      scope ? `more than ${MAX_REQUEST_ERRORS_PER_MINUTE} uncaught request errors in a minute: stopping` : 'uncaught error outside any request: stopping',
    );
    opts.onFatal(err);
  };
}

/** Registers the last resort on the process (the gateway process only; tests build the app without it). */
export function installLastResort(opts: LastResortOptions): void {
  const handle = createLastResort(opts);
  process.on('uncaughtException', (err, origin) => handle(err, origin));
  process.on('unhandledRejection', (reason) => handle(reason, 'unhandledRejection'));
}
