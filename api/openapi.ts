// GET /v1/openapi.json — STUB, replaced by the gateway issue (document built from every router's operations).
import { Router } from 'express';
import type { AppDeps } from './app.js';

export function createOpenApiRouter(_deps: AppDeps): Router {
  return Router();
}
