// The codec server's HTTP handler: Temporal's remote codec protocol (samples-go codec-server/
// protocol.md: POST …/encode and …/decode with a JSON `{ payloads: [...] }`, metadata values and data
// in base64, only the last path segment naming the operation, the namespace in `X-Namespace`) for
// the Web UI and the `temporal` CLI, behind an operator credential.
//
// Who may call it:
// - the `temporal` CLI and scripts: `Authorization: Bearer <CODEC_SERVER_TOKEN>` (`--codec-auth`);
// - a browser on the Web UI: ui-server 2.54.1 has no credential of its own to pass without OIDC
//   (`codec.passAccessToken` forwards an OIDC access token only), but with `codec.includeCredentials`
//   the UI's fetch to the codec endpoint runs with `credentials: "include"` (its bundle:
//   `E?{headers:c,credentials:"include",…}`), so an operator signs in once on this server's /login
//   page and the session cookie it sets rides along. The cookie is HttpOnly and SameSite=Strict, and
//   Secure whenever the sign-in came over HTTPS; it holds an expiry and an HMAC of it under the
//   token, never the token.
// Browsers: only the configured UI origins get CORS answers (with credentials); a request from any
// other origin is refused before anything is decoded, and /login only takes same-origin posts.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Payload } from '@temporalio/common';
import type { AesGcmPayloadCodec } from './payload-codec.js';

interface CodecHttpOptions {
  codec: AesGcmPayloadCodec;
  token: string;
  /** Browser origins (the Web UI's) allowed to call /encode and /decode. */
  origins: readonly string[];
  /** The namespace whose payloads these keys seal; another `X-Namespace` is refused. */
  namespace: string;
  logger: Logger;
  /** Lifetime of a login session. */
  sessionSeconds?: number;
  /** Mark the session cookie Secure on every sign-in (else only when reachedOverHttps says so). */
  secureCookie?: boolean;
}

const COOKIE = 'mg_codec_session';
const MAX_BODY_BYTES = 16 * 1024 * 1024;
const ALLOWED_HEADERS = 'content-type, x-namespace, authorization, authorization-extras';

type JsonPayload = { metadata?: Record<string, string> | null; data?: string | null };

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const digest = (s: string) => createHmac('sha256', 'mg-codec-compare').update(s).digest();
const sameSecret = (a: string, b: string) => timingSafeEqual(digest(a), digest(b));

function sessionValue(token: string, expires: number): string {
  return `${expires}.${createHmac('sha256', token).update(`codec-session:${expires}`).digest('base64url')}`;
}

function validSession(token: string, cookieHeader: string | undefined, now: number): boolean {
  for (const part of (cookieHeader ?? '').split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name !== COOKIE) continue;
    const value = rest.join('=');
    const expires = Number(value.split('.')[0]);
    if (Number.isInteger(expires) && expires > now && sameSecret(value, sessionValue(token, expires))) return true;
  }
  return false;
}

function fromJson(p: JsonPayload, i: number): Payload {
  if (typeof p !== 'object' || p === null) throw new HttpError(400, 'invalid_payload', `payloads[${i}] must be an object`);
  const b64 = (v: unknown, where: string) => {
    if (typeof v !== 'string' || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(v)) throw new HttpError(400, 'invalid_payload', `payloads[${i}].${where} must be base64`);
    return Buffer.from(v, 'base64');
  };
  const metadata: Record<string, Uint8Array> = {};
  for (const [k, v] of Object.entries(p.metadata ?? {})) metadata[k] = b64(v, `metadata.${k}`);
  return { metadata, data: p.data == null ? new Uint8Array() : b64(p.data, 'data') };
}

function toJson(p: Payload): JsonPayload {
  const metadata = Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
  return { metadata, data: Buffer.from(p.data ?? new Uint8Array()).toString('base64') };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'too_large', `the body exceeds ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
}

const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;
const loginForm = (note = '') =>
  page(
    'Payload codec sign-in',
    `${note}<form method="post" action="login"><label>Operator token <input type="password" name="token" autocomplete="off" autofocus></label> <button type="submit">Sign in</button></form>`,
  );

/**
 * Whether the browser reached this server over HTTPS: the page it signed in from was https (the
 * form post's Origin), a TLS-terminating proxy says so (X-Forwarded-Proto), or the socket is TLS.
 * Believing a client that claims HTTPS costs nothing: a Secure cookie is only withheld from plain
 * HTTP, which is that client's own loss.
 */
function reachedOverHttps(req: IncomingMessage): boolean {
  const forwarded = String(req.headers['x-forwarded-proto'] ?? '')
    .split(',')[0]!
    .trim()
    .toLowerCase();
  return (req.socket as { encrypted?: boolean }).encrypted === true || forwarded === 'https' || (req.headers.origin ?? '').startsWith('https://');
}

export function codecRequestHandler(opts: CodecHttpOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const sessionSeconds = opts.sessionSeconds ?? 12 * 3600;
  const origins = new Set(opts.origins);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://codec.invalid');
    const last = url.pathname.split('/').filter(Boolean).pop() ?? '';
    const origin = req.headers.origin;
    const ownOrigin =
      origin !== undefined && req.headers.host !== undefined && (origin === `http://${req.headers.host}` || origin === `https://${req.headers.host}`);
    const uiOrigin = origin !== undefined && origins.has(origin);
    if (uiOrigin) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-allow-credentials', 'true');
    }
    res.setHeader('vary', 'Origin');

    if (origin !== undefined && !uiOrigin && !ownOrigin) throw new HttpError(403, 'origin_not_allowed', 'this origin may not call the codec server');
    if (req.method === 'OPTIONS') {
      if (!uiOrigin) throw new HttpError(403, 'origin_not_allowed', 'this origin may not call the codec server');
      res.writeHead(204, { 'access-control-allow-methods': 'POST', 'access-control-allow-headers': ALLOWED_HEADERS, 'access-control-max-age': '600' }).end();
      return;
    }
    if (req.method === 'GET' && last === 'healthz') return sendJson(res, 200, { ok: true });
    if (last === 'login') return login(req, res, origin === undefined || ownOrigin);
    if (last === 'logout' && req.method === 'POST') {
      res.writeHead(303, { location: 'login', 'set-cookie': `${COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0` }).end();
      return;
    }
    if (last !== 'encode' && last !== 'decode') throw new HttpError(404, 'not_found', 'POST …/encode or …/decode');
    if (req.method !== 'POST') throw new HttpError(405, 'method_not_allowed', 'use POST');

    const auth = req.headers.authorization;
    const bearer = auth?.startsWith('Bearer ') ? auth.slice(7).trim() : undefined;
    const authed = bearer !== undefined ? sameSecret(bearer, opts.token) : validSession(opts.token, req.headers.cookie, Math.floor(Date.now() / 1000));
    if (!authed) throw new HttpError(401, 'unauthorized', 'sign in on the codec server (/login) or send Authorization: Bearer <operator token>');
    const namespace = req.headers['x-namespace'];
    if (typeof namespace === 'string' && namespace !== '' && namespace !== opts.namespace) {
      throw new HttpError(403, 'wrong_namespace', `this codec server serves namespace ${opts.namespace}`);
    }
    let body: { payloads?: unknown };
    try {
      body = JSON.parse((await readBody(req)).toString('utf8')) as { payloads?: unknown };
    } catch (err) {
      if (err instanceof HttpError) throw err;
      throw new HttpError(400, 'invalid_json', 'the body must be JSON: { "payloads": [...] }');
    }
    if (!Array.isArray(body?.payloads)) throw new HttpError(400, 'invalid_payloads', 'the body must be { "payloads": [...] }');
    const payloads = (body.payloads as JsonPayload[]).map(fromJson);
    let out: Payload[];
    try {
      out = last === 'encode' ? await opts.codec.encode(payloads) : await opts.codec.decode(payloads);
    } catch (err) {
      // The codec's messages name a key id at most, never key material or payload content.
      throw new HttpError(422, 'codec_failed', (err as Error).message);
    }
    opts.logger.info({ op: last, namespace, payloads: payloads.length, via: bearer !== undefined ? 'bearer' : 'session' }, 'codec request');
    sendJson(res, 200, { payloads: out.map(toJson) });
  }

  async function login(req: IncomingMessage, res: ServerResponse, sameOrigin: boolean): Promise<void> {
    const html = (status: number, body: string, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'x-frame-options': 'DENY', ...headers }).end(body);
    if (req.method === 'GET') return void html(200, loginForm());
    if (req.method !== 'POST') throw new HttpError(405, 'method_not_allowed', 'use GET or POST');
    if (!sameOrigin) throw new HttpError(403, 'origin_not_allowed', 'sign in from the codec server page');
    const form = new URLSearchParams((await readBody(req)).toString('utf8'));
    const token = form.get('token') ?? '';
    if (!sameSecret(token, opts.token)) {
      opts.logger.warn('codec sign-in refused');
      return void html(401, loginForm('<p role="alert">Wrong token.</p>'));
    }
    const expires = Math.floor(Date.now() / 1000) + sessionSeconds;
    const cookie = `${COOKIE}=${sessionValue(opts.token, expires)}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${sessionSeconds}${opts.secureCookie || reachedOverHttps(req) ? '; Secure' : ''}`;
    opts.logger.info('codec sign-in');
    html(200, page('Signed in', '<p id="signed-in">The Web UI can now show decoded payloads in this browser.</p>'), { 'set-cookie': cookie });
  }

  return (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) return void res.destroy();
      if (err instanceof HttpError) return sendJson(res, err.status, { error: { code: err.code, message: err.message } });
      opts.logger.error({ err: (err as Error).name }, 'codec server error');
      sendJson(res, 500, { error: { code: 'internal', message: 'internal error' } });
    });
  };
}
