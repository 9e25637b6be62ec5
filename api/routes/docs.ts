// GET /docs: an interactive API reference (Swagger UI) rendered in the browser from
// /v1/openapi.json. Every asset comes from the gateway itself, out of the swagger-ui-dist package:
// no CDN, so it works offline. No auth (the document is public); "Authorize" takes an API key for
// "Try it out". Off the hot path: nothing is resolved or read until the first /docs request.
import { Router, type RequestHandler } from 'express';

/** The files of swagger-ui-dist the page loads, and nothing else from the package. */
const assets: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const page = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Media Generation API reference</title>
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/swagger-ui.css">
  <style>body { margin: 0 } .swagger-ui .topbar { display: none }</style>
</head>
<body>
  <div id="api-reference"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`;

// validatorUrl: null — Swagger UI would otherwise send the document to an online validator.
const init = `window.ui = SwaggerUIBundle({
  url: '/v1/openapi.json',
  dom_id: '#api-reference',
  deepLinking: true,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
  persistAuthorization: false,
  validatorUrl: null,
  tryItOutEnabled: false,
});
`;

/** Mounted at /docs: requests elsewhere never enter it. */
export function createDocsRouter(): Router {
  const router = Router();
  let assetDir: Promise<string> | null = null;
  const dir = () =>
    (assetDir ??= (async () => {
      const [{ createRequire }, { dirname }] = await Promise.all([import('node:module'), import('node:path')]);
      return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
    })());

  const html: RequestHandler = (_req, res) => {
    res.type('html').set('cache-control', 'no-cache').send(page);
  };
  router.get('/', html);
  router.get('/init.js', (_req, res) => {
    res.type('text/javascript').set('cache-control', 'no-cache').send(init);
  });
  router.get('/:asset', async (req, res, next) => {
    const name = String(req.params.asset);
    const type = assets[name];
    if (!type) return next();
    try {
      res.sendFile(name, { root: await dir(), headers: { 'content-type': type }, maxAge: '1d' }, (err) => err && next(err));
    } catch (err) {
      next(err);
    }
  });
  return router;
}
