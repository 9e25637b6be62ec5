// JSON bodies: only application/json is accepted on JSON endpoints (else 400), 1 MB at most.
import express, { type RequestHandler } from 'express';
import { ApiError } from './errors.js';

const parser = express.json({ limit: '1mb', strict: true, type: () => true });

export const jsonBody: RequestHandler = (req, res, next) => {
  if (!req.is('application/json')) {
    next(new ApiError(400, 'invalid_request', 'Content-Type must be application/json'));
    return;
  }
  parser(req, res, (err?: unknown) => {
    if (err) return next(err);
    if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body)) {
      return next(new ApiError(400, 'invalid_request', 'request body must be a JSON object'));
    }
    next();
  });
};
