// Per-request id (echoed as X-Request-Id), access log line and request metrics.
import type { RequestHandler } from 'express';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ApiMetrics } from './metrics.js';

export function requestContext(deps: { logger: Logger; metrics: ApiMetrics }): RequestHandler {
  return (req, res, next) => {
    const requestId = randomUUID();
    res.locals.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    const start = process.hrtime.bigint();
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const route = routeLabel(req.baseUrl, req.route?.path);
      deps.metrics.observeRequest(req.method, route, res.statusCode, seconds);
      deps.logger.debug({ requestId, method: req.method, route, status: res.statusCode, ms: Math.round(seconds * 1000) }, 'request');
    });
    next();
  };
}

/** The matched route pattern (never the raw path, which would explode label cardinality). */
function routeLabel(baseUrl: string, path: unknown): string {
  return typeof path === 'string' ? `${baseUrl}${path}` : 'unmatched';
}
