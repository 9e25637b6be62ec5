// GET /console: the customer console (console/, bundled by scripts/build/build-console.ts into
// dist/console). Static files only; the page reaches the API with the TypeScript client over the
// session cookie (api/console-session.ts). Read from disk once, on first request.
import { Router, type RequestHandler } from 'express';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { ApiError } from '../errors.js';
import type { Config } from '../../shared/config.js';

/** The bundle's files, and nothing else from the folder. */
const files: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

/** Where the build writes the bundle: dist/console beside dist/api. */
const consoleDir = fileURLToPath(new URL('../../console/', import.meta.url));

/**
 * The page's policy: its own scripts, styles and the API only; media from wherever its URLs point (the
 * store); and requests to the store's presigned endpoint (`storageOrigin`), where large uploads go.
 */
const cspOf = (storageOrigins: readonly string[]) =>
  "default-src 'self'; img-src 'self' blob: data: http: https:; media-src 'self' blob: http: https:; style-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'" +
  `; connect-src ${["'self'", ...storageOrigins].join(' ')}`;

/** The origins presigned upload URLs point at: the presign endpoint's, with the bucket's own host when virtual-hosted. */
export function storageOrigins(c: Pick<Config, 'S3_ENDPOINT' | 'S3_PRESIGN_ENDPOINT' | 'S3_PATH_STYLE' | 'S3_BUCKET'>): string[] {
  const u = new URL(c.S3_PRESIGN_ENDPOINT ?? c.S3_ENDPOINT);
  return c.S3_PATH_STYLE ? [u.origin] : [u.origin, `${u.protocol}//${c.S3_BUCKET}.${u.host}`];
}

/** `uploadOrigins`: where the page may send large uploads (storageOrigins). */
export function createConsoleRouter(uploadOrigins: readonly string[] = []): Router {
  const CSP = cspOf(uploadOrigins);
  const router = Router();
  const cache = new Map<string, Promise<Buffer>>();
  const serve =
    (name: string): RequestHandler =>
    async (_req, res) => {
      let body = cache.get(name);
      if (!body) cache.set(name, (body = readFile(consoleDir + name)));
      const bytes = await body.catch((err: NodeJS.ErrnoException) => {
        cache.delete(name);
        throw err.code === 'ENOENT' ? new ApiError(404, 'not_found', 'the console is not built (npm run build)') : err;
      });
      res.type(files[name]!).set('cache-control', 'no-cache').set('content-security-policy', CSP).set('x-frame-options', 'DENY').send(bytes);
    };
  router.get('/', serve('index.html'));
  for (const name of Object.keys(files)) router.get(`/${name}`, serve(name));
  return router;
}
