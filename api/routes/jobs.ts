// The four job kinds' create, status, URL and cancel endpoints — being written (jobs issue).
import { Router } from 'express';
import type { AppDeps } from '../app.js';
import type { Auth } from '../auth.js';
import type { Operation } from '../operations.js';

export const jobOperations: Operation[] = [];

export function createJobsRouter(_deps: AppDeps, _auth: Auth): Router {
  return Router();
}
