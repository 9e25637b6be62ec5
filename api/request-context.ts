// Per-request id (echoed as X-Request-Id), access log line and request metrics; security headers.
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

/**
 * On every answer: no content sniffing, and no caching by default — JSON answers carry job state
 * and presigned URLs that must not outlive their request in a shared cache. Routes that serve
 * media set their own Cache-Control.
 */
export const securityHeaders: RequestHandler = (_req, res, next) => {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Cache-Control', 'no-store');
  next();
};
