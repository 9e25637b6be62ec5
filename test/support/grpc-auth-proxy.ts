// A stand-in for a Temporal frontend that demands credentials (the dev server can require neither
// an API key nor a client certificate): an HTTP/2 server on loopback that forwards every gRPC
// stream to the real test-stack frontend (h2c) unchanged — headers, body frames, trailers — and
// refuses a stream whose `authorization` is not `Bearer <an accepted key>` with a trailers-only
// response carrying grpc-status 16 (UNAUTHENTICATED), as gRPC's HTTP/2 protocol spells it
// (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md). With `tls`, it terminates TLS
// with the given server pair and, with `clientCa`, demands a client certificate that CA signed.
import http2, { type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';

export interface GrpcAuthProxy {
  address: string;
  /** Keys accepted from now on; empty: any request passes (no API key required). */
  acceptKeys(keys: string[]): void;
  /** Streams refused so far for want of an accepted key. */
  refused: number;
  /** Streams forwarded so far. */
  forwarded: number;
  close(): Promise<void>;
}

export interface ProxyOptions {
  upstream: string;
  keys?: string[];
  tls?: { certFile: string; keyFile: string; clientCaFile?: string };
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'http2-settings', 'host']);

function forwardable(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    if (HOP_BY_HOP.has(k) || (k.startsWith(':') && k !== ':method' && k !== ':path' && k !== ':status')) continue;
    out[k] = v;
  }
  return out;
}

export async function startGrpcAuthProxy(opts: ProxyOptions): Promise<GrpcAuthProxy> {
  let keys = new Set(opts.keys ?? []);
  let upstream: ClientHttp2Session | null = null;
  const session = () => {
    if (!upstream || upstream.closed || upstream.destroyed) {
      upstream = http2.connect(`http://${opts.upstream}`);
      upstream.on('error', () => undefined);
    }
    return upstream;
  };
  const proxy: GrpcAuthProxy = {
    address: '',
    refused: 0,
    forwarded: 0,
    acceptKeys: (next) => void (keys = new Set(next)),
    close: async () => {
      for (const s of sessions) s.destroy();
      upstream?.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const sessions = new Set<http2.ServerHttp2Session>();

  const onStream = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    stream.on('error', () => undefined);
    const auth = headers.authorization;
    if (keys.size > 0 && !(typeof auth === 'string' && auth.startsWith('Bearer ') && keys.has(auth.slice(7)))) {
      proxy.refused++;
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': 'API key not accepted' }, { endStream: true });
      return;
    }
    proxy.forwarded++;
    const req = session().request({ ...forwardable(headers), ':authority': opts.upstream, ':scheme': 'http' });
    req.on('error', () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
    let trailers: OutgoingHttpHeaders | null = null;
    req.on('response', (h) => {
      if (stream.destroyed) return;
      const out = forwardable(h);
      if (h['grpc-status'] !== undefined) {
        // Trailers-only: the status rides on the headers and nothing follows.
        stream.respond(out, { endStream: true });
        req.close();
        return;
      }
      stream.respond(out, { waitForTrailers: true });
      req.pipe(stream);
    });
    req.on('trailers', (t) => (trailers = forwardable(t)));
    stream.on('wantTrailers', () => stream.sendTrailers(trailers ?? { 'grpc-status': '0' }));
    stream.pipe(req);
    stream.on('close', () => {
      if (!req.closed) req.close(http2.constants.NGHTTP2_CANCEL);
    });
  };

  const server = opts.tls
    ? http2.createSecureServer({
        cert: readFileSync(opts.tls.certFile),
        key: readFileSync(opts.tls.keyFile),
        ...(opts.tls.clientCaFile ? { ca: readFileSync(opts.tls.clientCaFile), requestCert: true, rejectUnauthorized: true } : {}),
      })
    : http2.createServer();
  server.on('stream', onStream);
  server.on('session', (s) => {
    sessions.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sessions.delete(s));
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}
