// GET /v1/projects, /v1/actors, /v1/voices — STUB, replaced by the gateway issue.
import { Router } from 'express';
import type { AppDeps } from '../app.js';
import type { Auth } from '../auth.js';
import type { Operation } from '../operations.js';

export const discoveryOperations: Operation[] = [];

export function createDiscoveryRouter(_deps: AppDeps, _auth: Auth): Router {
  return Router();
}
