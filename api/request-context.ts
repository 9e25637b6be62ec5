// Per-request id (echoed as X-Request-Id), access log line and request metrics; security headers.
// With tracing on, the request's server span (its trace id answered in `traceparent` and
// X-Trace-Id, so a client or an operator can open the trace) is the active context of everything
// the request does, the workflow start included. Its `url.path` has upload tokens redacted (a
// /media/uploads/… path is the credential to the file).
import type { RequestHandler } from 'express';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ApiMetrics } from './metrics.js';
import { SpanStatusCode } from '@opentelemetry/api';
import { runInContext, startRequestSpan, traceparentOf, tracingEnabled } from '../shared/tracing.js';
import { redactPath } from '../shared/redact.js';

export function requestContext(deps: { logger: Logger; metrics: ApiMetrics; config: { TRACE_TRUST_INBOUND: boolean } }): RequestHandler {
  return (req, res, next) => {
    const requestId = randomUUID();
    res.locals.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    const start = process.hrtime.bigint();
    if (!tracingEnabled()) {
      res.on('finish', () => {
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        const route = routeLabel(req.baseUrl, req.route?.path);
        deps.metrics.observeRequest(req.method, route, res.statusCode, seconds);
        deps.logger.debug({ requestId, method: req.method, route, status: res.statusCode, ms: Math.round(seconds * 1000) }, 'request');
      });
      return next();
    }
    // The route is known only after routing: the span is renamed when the answer is sent.
    const attributes = { 'http.request.method': req.method, 'url.path': redactPath(req.path), 'mediagen.request_id': requestId };
    const { span, ctx } = startRequestSpan(req.method, req.headers, attributes, deps.config.TRACE_TRUST_INBOUND);
    res.setHeader('traceparent', traceparentOf(span));
    res.setHeader('X-Trace-Id', span.spanContext().traceId);
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const route = routeLabel(req.baseUrl, req.route?.path);
      deps.metrics.observeRequest(req.method, route, res.statusCode, seconds);
      span.updateName(`${req.method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': res.statusCode });
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      runInContext(ctx, () => deps.logger.debug({ requestId, method: req.method, route, status: res.statusCode, ms: Math.round(seconds * 1000) }, 'request'));
    });
    res.on('close', () => {
      if (!res.writableFinished) span.end();
    });
    runInContext(ctx, next);
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
