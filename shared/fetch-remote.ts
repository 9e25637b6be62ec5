// The one way this service fetches a URL a client gave it (upload-from-url, job inputs given as
// URLs), safe against server-side request forgery:
// - only https:, only the default port 443, no credentials in the URL;
// - the host is resolved once and EVERY address must be public (isPublicAddress); the TLS
//   connection then goes straight to the checked address (no second lookup a DNS rebinding could
//   change), with the host name as SNI and for the certificate check;
// - redirects are followed only to https:, re-checked hop by hop, at most 3;
// - connect and total timeouts; a byte cap enforced while streaming; a minimum transfer rate, so
//   a server trickling bytes cannot hold a fetch slot for the whole total timeout.
// The single exception is one loopback https origin for tests, taken from the process environment
// (FETCH_ALLOW_LOOPBACK_ORIGIN) by the caller — never from a request.
import https from 'node:https';
import tls from 'node:tls';
import net from 'node:net';
import dns from 'node:dns';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { isLoopbackAddress, isPublicAddress } from './public-address.js';

// The address classifier has its own module; callers import it from here too.
export { isLoopbackAddress, isPublicAddress } from './public-address.js';

type FetchErrorKind =
  /** The URL or an address it leads to is not allowed (never retried). */
  | 'refused'
  /** The body is larger than allowed (never retried). */
  | 'too_large'
  /** The fetch failed for good: 4xx, bad redirect, TLS failure, total timeout (never retried). */
  | 'failed'
  /** A transient failure worth retrying: connection refused/reset, connect timeout, 5xx, 429. */
  | 'unavailable';

export class FetchError extends Error {
  override name = 'FetchError';
  constructor(
    readonly kind: FetchErrorKind,
    message: string,
  ) {
    super(message);
  }
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

export interface FetchRemoteOptions {
  /** Hard byte cap of the body (the largest any accepted type may have). */
  maxBytes: number;
  connectTimeoutMs: number;
  totalTimeoutMs: number;
  /**
   * Minimum transfer rate: fewer than minBytesPerSecond × window bytes in any window of
   * minRateWindowMs (from the first request on, headers included) aborts the fetch. 0 = off.
   */
  minBytesPerSecond?: number;
  minRateWindowMs?: number;
  /** DNS resolution (default: dns.lookup with all addresses). Tests inject private answers. */
  resolver?: Resolver;
  /** Opens the TLS connection to the checked address (default tls.connect). Tests spy on it. */
  connect?: (options: tls.ConnectionOptions) => net.Socket;
  /** The one loopback https origin allowed (tests only; from config, never from a request). */
  allowLoopbackOrigin?: string;
  /** Extra trusted CA (PEM), added to the default roots. */
  ca?: Buffer | string;
  signal?: AbortSignal;
  /** Accept header sent to the remote server. */
  accept?: string;
  /** Extra request headers (e.g. a provider CDN's key): sent only to the first URL's origin, never after a redirect elsewhere. */
  headers?: Record<string, string>;
  /** A host allowlist checked on every hop (provider output CDNs), given the hop's URL too; a host it refuses is `refused`. */
  allowHost?: (hostname: string, url: URL) => boolean;
}

interface FetchRemoteResult {
  /** The body, capped at maxBytes; errors with FetchError on cap, timeout or network failure. */
  stream: Readable;
  /** The remote Content-Type header: a hint only, the bytes decide the type. */
  contentTypeHint: string | undefined;
  finalUrl: string;
  contentLength: number | undefined;
}

const MAX_REDIRECTS = 3;

// ----------------------------------------------------------------------------- URL checks

export const defaultResolver: Resolver = async (host) => {
  const all = await dns.promises.lookup(host, { all: true, verbatim: true });
  return all.map((a) => ({ address: a.address, family: a.family }));
};

interface CheckedTarget {
  url: URL;
  hostname: string; // without brackets
  address: ResolvedAddress;
  port: number;
}

function parseTarget(raw: string | URL, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    throw new FetchError('refused', 'not a valid URL');
  }
  return url;
}

function sameOrigin(url: URL, origin: string | undefined): boolean {
  if (!origin) return false;
  try {
    return new URL(origin).origin === url.origin;
  } catch {
    return false;
  }
}

/**
 * The checks that need no DNS: https only, no credentials, port 443 (or the allowed loopback test
 * origin), and a public address when the host is an IP literal. The gateway runs it to refuse
 * obviously bad URLs at once; the fetcher runs it again on every hop.
 */
export function precheckUrl(raw: string | URL, allowLoopbackOrigin?: string): URL {
  const url = typeof raw === 'string' ? parseTarget(raw) : raw;
  if (url.protocol !== 'https:') throw new FetchError('refused', 'only https URLs are allowed');
  if (url.username || url.password) throw new FetchError('refused', 'URLs with credentials are not allowed');
  const loopbackAllowed = sameOrigin(url, allowLoopbackOrigin);
  if (url.port !== '' && !loopbackAllowed) throw new FetchError('refused', 'only the default https port (443) is allowed');
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  if (hostname === '') throw new FetchError('refused', 'the URL has no host');
  if (net.isIP(hostname) && !isPublicAddress(hostname) && !(loopbackAllowed && isLoopbackAddress(hostname))) {
    throw new FetchError('refused', 'the address is not public');
  }
  return url;
}

/** Checks one URL (the first or a redirect hop) and resolves it to the address to connect to. */
async function checkTarget(url: URL, opts: FetchRemoteOptions): Promise<CheckedTarget> {
  precheckUrl(url, opts.allowLoopbackOrigin);
  const loopbackAllowed = sameOrigin(url, opts.allowLoopbackOrigin);
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  if (opts.allowHost && !opts.allowHost(hostname, url)) throw new FetchError('refused', 'the host is not on the allowed list');

  let addresses: ResolvedAddress[];
  const literal = net.isIP(hostname);
  // One answer for "does not resolve" and "resolves to a private address": telling them apart
  // would let a caller map internal DNS names from outside.
  const notPublic = () => new FetchError('refused', literal ? 'the address is not public' : `${hostname} does not resolve to a public address`);
  if (literal) {
    addresses = [{ address: hostname, family: literal }];
  } else {
    try {
      addresses = await (opts.resolver ?? defaultResolver)(hostname);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'EAI_AGAIN' || code === 'ETIMEOUT') throw new FetchError('unavailable', 'temporary DNS failure');
      throw notPublic();
    }
    if (addresses.length === 0) throw notPublic();
  }
  for (const a of addresses) {
    const ok = isPublicAddress(a.address) || (loopbackAllowed && isLoopbackAddress(a.address));
    if (!ok) throw notPublic();
  }
  const port = url.port === '' ? 443 : Number(url.port);
  return { url, hostname, address: addresses[0]!, port };
}

// ----------------------------------------------------------------------------- fetching

const transientCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EAI_AGAIN', 'ECONNABORTED']);

function classifyNetworkError(err: unknown): FetchError {
  if (err instanceof FetchError) return err;
  const code = String((err as { code?: string }).code ?? '');
  if (transientCodes.has(code)) return new FetchError('unavailable', `connection failed (${code})`);
  if (/CERT|SSL|TLS|SIGNATURE|ALTNAME|ISSUER/.test(code)) return new FetchError('failed', `TLS verification failed (${code})`);
  return new FetchError('unavailable', `connection failed${code ? ` (${code})` : ''}`);
}

/** Counts bytes and fails with too_large past the cap; the source is destroyed with it. */
function byteCap(maxBytes: number, onBytes: (n: number) => void): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      seen += chunk.length;
      onBytes(chunk.length);
      if (seen > maxBytes) return cb(new FetchError('too_large', `the remote file exceeds ${maxBytes} bytes`));
      cb(null, chunk);
    },
  });
}

/** One GET to a checked target, answering once the response headers arrive. */
function requestOnce(
  target: CheckedTarget,
  opts: FetchRemoteOptions,
  extraCa: string[] | undefined,
  onAbort: (fn: (err: Error) => void) => void,
  extraHeaders: Record<string, string> = {},
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const agent = new https.Agent({ keepAlive: false, maxSockets: 1 });
    const connect = opts.connect ?? ((o: tls.ConnectionOptions) => tls.connect(o));
    // Every socket of this request goes to the address that was checked — never a fresh lookup.
    (agent as unknown as { createConnection: (o: tls.ConnectionOptions) => net.Socket }).createConnection = (o) =>
      connect({
        ...o,
        host: target.address.address,
        port: target.port,
        servername: net.isIP(target.hostname) ? undefined : target.hostname,
      } as tls.ConnectionOptions);

    let settled = false;
    const connectTimer = setTimeout(() => {
      req.destroy(new FetchError('unavailable', `connect timed out after ${opts.connectTimeoutMs} ms`));
    }, opts.connectTimeoutMs);

    const req = https.request({
      host: target.hostname,
      port: target.port,
      path: `${target.url.pathname}${target.url.search}`,
      method: 'GET',
      agent,
      ca: extraCa,
      servername: net.isIP(target.hostname) ? undefined : target.hostname,
      headers: {
        ...extraHeaders,
        'user-agent': 'media-generation-service/1.0 (upload fetcher)',
        accept: opts.accept ?? 'image/*,video/*;q=0.9,*/*;q=0.1',
        'accept-encoding': 'identity',
      },
    });
    onAbort((err) => req.destroy(err));
    req.on('socket', (socket) => {
      socket.once('secureConnect', () => clearTimeout(connectTimer));
    });
    req.on('response', (res) => {
      settled = true;
      clearTimeout(connectTimer);
      res.on('close', () => agent.destroy());
      resolve(res);
    });
    req.on('error', (err) => {
      clearTimeout(connectTimer);
      agent.destroy();
      if (!settled) reject(classifyNetworkError(err));
    });
    req.end();
  });
}

/**
 * Fetches an https URL under the rules at the top of this file. Resolves once a 200 response's
 * headers arrive; the returned stream carries the body (capped) and fails on timeout or cap.
 */
export async function fetchRemote(rawUrl: string, opts: FetchRemoteOptions): Promise<FetchRemoteResult> {
  const extraCa = opts.ca ? [...tls.rootCertificates, opts.ca.toString()] : undefined;
  let current: ((err: Error) => void) | undefined;
  let timedOut = false;
  const abortCurrent = (err: Error) => current?.(err);
  const totalTimer = setTimeout(() => {
    timedOut = true;
    abortCurrent(new FetchError('failed', `fetching the URL took longer than ${opts.totalTimeoutMs} ms`));
  }, opts.totalTimeoutMs);
  // The minimum rate is checked once per window over the bytes of that window.
  let received = 0;
  let receivedAtWindowStart = 0;
  const minRate = opts.minBytesPerSecond ?? 0;
  const windowMs = opts.minRateWindowMs ?? 10_000;
  const rateTimer =
    minRate > 0
      ? setInterval(() => {
          const inWindow = received - receivedAtWindowStart;
          receivedAtWindowStart = received;
          if (inWindow < (minRate * windowMs) / 1000) {
            abortCurrent(new FetchError('failed', `the transfer was slower than ${minRate} bytes/s over ${windowMs} ms`));
          }
        }, windowMs)
      : undefined;
  const onSignal = () => abortCurrent(new FetchError('failed', 'fetch aborted'));
  opts.signal?.addEventListener('abort', onSignal, { once: true });
  const cleanup = () => {
    clearInterval(rateTimer);
    clearTimeout(totalTimer);
    opts.signal?.removeEventListener('abort', onSignal);
  };

  try {
    let url = parseTarget(rawUrl);
    const firstOrigin = url.origin;
    for (let hop = 0; ; hop++) {
      if (opts.signal?.aborted) throw new FetchError('failed', 'fetch aborted');
      if (timedOut) throw new FetchError('failed', `fetching the URL took longer than ${opts.totalTimeoutMs} ms`);
      const target = await checkTarget(url, opts);
      const res = await requestOnce(target, opts, extraCa, (fn) => (current = fn), url.origin === firstOrigin ? opts.headers : undefined);
      current = (err) => res.destroy(err);
      const status = res.statusCode ?? 0;

      if ([301, 302, 303, 307, 308].includes(status)) {
        res.resume();
        res.destroy();
        const location = res.headers.location;
        if (!location) throw new FetchError('failed', `redirect (${status}) without a Location`);
        if (hop >= MAX_REDIRECTS) throw new FetchError('failed', `more than ${MAX_REDIRECTS} redirects`);
        url = parseTarget(location, url);
        continue;
      }
      if (status !== 200 && status !== 203) {
        res.resume();
        res.destroy();
        if (status === 429 || status >= 500) throw new FetchError('unavailable', `the remote server answered ${status}`);
        throw new FetchError('failed', `the remote server answered ${status}`);
      }
      const lengthHeader = res.headers['content-length'];
      const contentLength = lengthHeader !== undefined && /^\d+$/.test(lengthHeader) ? Number(lengthHeader) : undefined;
      if (contentLength !== undefined && contentLength > opts.maxBytes) {
        res.destroy();
        throw new FetchError('too_large', `the remote file is ${contentLength} bytes, more than ${opts.maxBytes}`);
      }

      const capped = byteCap(opts.maxBytes, (n) => (received += n));
      res.on('error', (err) => capped.destroy(err instanceof FetchError ? err : classifyNetworkError(err)));
      res.on('aborted', () => capped.destroy(new FetchError('unavailable', 'the remote server closed the connection mid-body')));
      res.pipe(capped);
      capped.on('error', () => res.destroy());
      // From here the total timeout and the signal end the body stream.
      current = (err) => {
        capped.destroy(err);
        res.destroy();
      };
      capped.on('close', () => {
        cleanup();
        res.destroy();
      });
      return { stream: capped, contentTypeHint: res.headers['content-type'], finalUrl: url.toString(), contentLength };
    }
  } catch (err) {
    cleanup();
    throw classifyNetworkError(err);
  }
}
