// JSON bodies: only application/json is accepted on JSON endpoints (else 400), 1 MB at most,
// nested at most MAX_JSON_DEPTH deep (checked on the raw bytes before parsing), no NUL in any
// string (Postgres text cannot store one).
import express, { type RequestHandler } from 'express';
import { ApiError } from './errors.js';
import { nulPath } from './validate.js';
import { verifyJsonDepth } from './json-limits.js';

const parser = express.json({ limit: '1mb', strict: true, type: () => true, verify: verifyJsonDepth });

export const jsonBody: RequestHandler = (req, res, next) => {
  if (!req.is('application/json')) {
    next(new ApiError(400, 'invalid_request', 'Content-Type must be application/json'));
    return;
  }
  parser(req, res, (err?: unknown) => {
    if (err) return next(err);
    // This runs in the body stream's `end` listener: a throw here would escape Express and reach
    // the process's last-resort handler, so every failure is handed to the error middleware.
    try {
      if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body)) {
        return next(new ApiError(400, 'invalid_request', 'request body must be a JSON object'));
      }
      const nul = nulPath(req.body);
      if (nul !== null) return next(new ApiError(400, 'invalid_request', `${nul}: must not contain NUL (\\u0000) characters`));
    } catch (e) {
      return next(e);
    }
    next();
  });
};

/** A NUL in the path or query string (`%00`) is refused before a route runs a query with it. */
export const refuseNulInUrl: RequestHandler = (req, _res, next) => {
  if (/%00/i.test(req.url) || req.url.includes('\0')) return next(new ApiError(400, 'invalid_request', 'the URL must not contain NUL (%00) characters'));
  next();
};
