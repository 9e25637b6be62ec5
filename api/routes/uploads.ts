// POST /v1/upload and /v1/upload-from-url — STUB, replaced by the uploads issue.
import { Router } from 'express';
import type { AppDeps } from '../app.js';
import type { Auth } from '../auth.js';
import type { Operation } from '../operations.js';

export const uploadOperations: Operation[] = [];

export function createUploadsRouter(_deps: AppDeps, _auth: Auth): Router {
  return Router();
}
