// Webhook targets: the URL rules (the gateway at create time, the delivery activity again at
// delivery time) and the one POST. No Temporal code: the gateway imports the rules.
//
// The rules are upload-from-url's (activities/fetch-remote.ts): https on the default port, no
// credentials, an IP literal must be public; at delivery the host is resolved and EVERY address
// must be public, the connection is pinned to the checked address (no second lookup), and
// redirects are not followed (a 3xx is not a delivery). The one exception: with
// WEBHOOK_ALLOW_LOOPBACK (test-only, refused in production) a loopback IP literal is allowed, over
// http or https, on any port.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import { defaultResolver, FetchError, isLoopbackAddress, isPublicAddress, precheckUrl, type ResolvedAddress, type Resolver } from '../fetch-remote.js';

// ------------------------------------------------------------------ target rules

const unbracket = (host: string) => host.replace(/^\[|\]$/g, '');

function loopbackLiteral(url: URL, allowLoopback: boolean): boolean {
  const host = unbracket(url.hostname);
  return allowLoopback && net.isIP(host) !== 0 && isLoopbackAddress(host);
}

/**
 * The checks that need no DNS (the create endpoint runs them; delivery runs them again). Throws
 * FetchError('refused') with a reason fit for the client.
 */
export function checkWebhookUrl(raw: string, allowLoopback: boolean): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new FetchError('refused', 'not a valid URL');
  }
  if (loopbackLiteral(url, allowLoopback)) {
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new FetchError('refused', 'only https URLs are allowed');
    if (url.username || url.password) throw new FetchError('refused', 'URLs with credentials are not allowed');
    return url;
  }
  return precheckUrl(url);
}

/** Resolves a checked URL to the one address the delivery connects to; every address must be public. */
export async function resolveWebhookTarget(
  raw: string,
  opts: { allowLoopback: boolean; resolver?: Resolver },
): Promise<{ url: URL; address: ResolvedAddress }> {
  const url = checkWebhookUrl(raw, opts.allowLoopback);
  const host = unbracket(url.hostname);
  const literal = net.isIP(host);
  if (literal) return { url, address: { address: host, family: literal } };
  let addresses: ResolvedAddress[];
  try {
    addresses = await (opts.resolver ?? defaultResolver)(host);
  } catch (err) {
    // A name that does not resolve now (ENOTFOUND, EAI_AGAIN, a timeout) may resolve later — a
    // receiver's DNS being fixed or propagating — so the delivery retries for its usual day; only
    // an answer naming a non-public address is final.
    const code = (err as { code?: string }).code ?? 'an error';
    throw new FetchError('unavailable', `${host} did not resolve (${code}); retrying`);
  }
  // Loopback names (localhost) are never allowed: the test exception covers IP literals only.
  if (addresses.length === 0 || addresses.some((a) => !isPublicAddress(a.address)))
    throw new FetchError('refused', `${host} does not resolve to a public address`);
  return { url, address: addresses[0]! };
}

// ------------------------------------------------------------------ the POST

/** One POST to the checked address; resolves with the status once the answer's headers arrive. */
export function postWebhook(target: { url: URL; address: ResolvedAddress }, headers: Record<string, string>, body: string, timeoutMs: number): Promise<number> {
  const { url, address } = target;
  const lookup: LookupFunction = (_host, options, cb) => {
    // Node asks for every address when it may race IPv4/IPv6: give it the checked one only.
    if ((options as { all?: boolean }).all) (cb as unknown as (e: null, a: ResolvedAddress[]) => void)(null, [address]);
    else cb(null, address.address, address.family);
  };
  const mod = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request({
      protocol: url.protocol,
      hostname: unbracket(url.hostname),
      port: url.port === '' ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      agent: false,
      lookup,
      signal: AbortSignal.timeout(timeoutMs),
      headers: {
        ...headers,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'media-generation-service/1.0 (webhooks)',
      },
    });
    req.on('response', (res) => {
      resolve(res.statusCode ?? 0);
      // The answer's body means nothing to us: read a little of it, then hang up.
      let seen = 0;
      res.on('data', (chunk: Buffer) => {
        seen += chunk.length;
        if (seen > 64 * 1024) res.destroy();
      });
      res.on('error', () => undefined);
    });
    req.on('error', (err) => {
      const e = err as { name?: string; code?: string };
      reject(
        new Error(
          e.name === 'AbortError' || e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : `connection failed${e.code ? ` (${e.code})` : ''}`,
        ),
      );
    });
    req.end(body);
  });
}
