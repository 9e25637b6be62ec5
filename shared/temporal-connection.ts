// The one place a process's Temporal connection options are made, for the client (`Connection`,
// grpc-js) and the worker (`NativeConnection`, the Rust core) alike: TLS material, the mTLS client
// pair, the server name and the API key from shared/config/temporal.ts.
//
// Option names are those of @temporalio/client and @temporalio/worker 1.24.0: `tls:
// { serverRootCACertificate, clientCertPair: { crt, key }, serverNameOverride }` (common/lib/
// internal-non-workflow/tls-config.d.ts) and `apiKey` (a string or, for `Connection` only, a
// function read on every call). An API key without `tls` turns TLS on in the SDK
// (normalizeTlsConfig), so `tls: false` is passed explicitly when TLS is off.
//
// Rotation: an API key file is polled and a new key reaches `Connection` through its key function
// and `NativeConnection` through `setApiKey`. TLS files are read once: both SDKs take the bytes at
// connect time and offer no way to replace them on an open connection, so new certificates need a
// restart.
import { readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import type { NativeConnection, NativeConnectionOptions } from '@temporalio/worker';
import { temporalSecurity, type TemporalSecurity, type TemporalSettings } from './config/temporal.js';

const API_KEY_POLL_MS = 1000;

interface KeySource {
  current(): string;
  subscribe(fn: (key: string) => void): () => void;
}

const keySources = new Map<string, KeySource & { subscribers: Set<(key: string) => void> }>();

/** One poller per key file for the whole process, however many connections read it. */
function keySource(path: string, initial: string): KeySource {
  const existing = keySources.get(path);
  if (existing) return existing;
  let key = initial;
  const subscribers = new Set<(key: string) => void>();
  const source = {
    subscribers,
    current: () => key,
    subscribe(fn: (key: string) => void) {
      subscribers.add(fn);
      return () => subscribers.delete(fn);
    },
  };
  // watchFile polls the path (stat), so a rotation by rename or by a symlink swap (a Kubernetes
  // secret volume) is seen as well as an in-place write; fs.watch would lose the renamed inode.
  watchFile(path, { interval: API_KEY_POLL_MS, persistent: false }, (now: Stats) => {
    if (now.nlink === 0 && now.size === 0) return; // gone for a moment during a swap: keep the key in hand
    let next: string;
    try {
      next = readFileSync(path, 'utf8').trim();
    } catch {
      return; // unreadable mid-rotation: the next poll tries again
    }
    if (next === '' || next === key) return;
    key = next;
    for (const fn of subscribers) fn(key);
  });
  keySources.set(path, source);
  return source;
}

/** Stop every key file poller (tests that rewrite a key file between cases). */
export function stopApiKeyWatchers(): void {
  for (const path of keySources.keys()) unwatchFile(path);
  keySources.clear();
}

function describeTls(s: TemporalSettings): string {
  const parts = [
    s.TEMPORAL_TLS_CERT_FILE ? `client certificate ${s.TEMPORAL_TLS_CERT_FILE} (TEMPORAL_TLS_CERT_FILE) with key ${s.TEMPORAL_TLS_KEY_FILE}` : null,
    s.TEMPORAL_TLS_CA_FILE ? `server CA ${s.TEMPORAL_TLS_CA_FILE} (TEMPORAL_TLS_CA_FILE)` : 'server CA: the system roots',
    s.TEMPORAL_TLS_SERVER_NAME ? `server name ${s.TEMPORAL_TLS_SERVER_NAME}` : null,
  ];
  return parts.filter(Boolean).join(', ');
}

// What the two transports say when TLS fails: grpc-js (Node's TLS errors) and the Rust core (rustls
// through tonic/hyper). With TLS 1.3 a server that refuses the client certificate does so after the
// client's handshake finished, so the client sees the connection reset or closed (hyper's "connection
// closed" or "connection was not ready" as its first call is canceled, or a broken pipe as it writes
// that call) rather than an alert.
const TLS_FAILURE =
  /certificate|x509|handshake|tls|ssl|alert|issuer|UnknownCA|BadCertificate|CERT_|self.signed|ConnectionReset|ECONNRESET|connection closed|connection was not ready|BrokenPipe|EPIPE/i;
const AUTH_FAILURE = /unauthenticated|unauthori[sz]ed|permission denied|api key|invalid token|jwt/i;

/** A connect failure said in terms of the settings: the files involved, never key material. */
export function explainConnectFailure(s: TemporalSettings, security: TemporalSecurity, err: unknown): Error {
  const cause = causes(err);
  const where = `Temporal at ${s.TEMPORAL_ADDRESS}`;
  let message: string;
  if (security.tls && TLS_FAILURE.test(cause)) {
    message = `cannot connect to ${where}: the TLS handshake failed or the frontend closed the connection (${describeTls(s)}); check that the frontend's certificate chains to the CA and names the address or TEMPORAL_TLS_SERVER_NAME, and that the frontend trusts the client certificate`;
  } else if (security.apiKey && AUTH_FAILURE.test(cause)) {
    const from = security.apiKey.file ? `the key in ${security.apiKey.file} (TEMPORAL_API_KEY_FILE)` : 'TEMPORAL_API_KEY';
    message = `cannot connect to ${where}: the server refused ${from}`;
  } else if (security.tls) {
    message = `cannot connect to ${where} over TLS (${describeTls(s)})`;
  } else {
    message = `cannot connect to ${where}`;
  }
  return new Error(`${message}: ${cause}`, { cause: err });
}

/** The error's message and those of its causes (grpc-js puts the server's answer in `cause`). */
function causes(err: unknown): string {
  const out: string[] = [];
  for (let e: unknown = err; e && out.length < 4; e = (e as { cause?: unknown }).cause) out.push(e instanceof Error ? e.message : String(e));
  return out.join(': ');
}

/** `Connection` options (gateway, admin CLI, scripts, tests): TLS and an API key that follows its file. */
function clientConnectionOptions(s: TemporalSettings, extra: Partial<ConnectionOptions> = {}): ConnectionOptions {
  const security = temporalSecurity(s);
  const { apiKey } = security;
  return {
    address: s.TEMPORAL_ADDRESS,
    tls: security.tls,
    ...(apiKey ? { apiKey: apiKey.file ? keyFunction(apiKey.file, apiKey.value) : apiKey.value } : {}),
    ...extra,
  };
}

function keyFunction(path: string, initial: string): () => string {
  const source = keySource(path, initial);
  return () => source.current();
}

/** A client connection made on first use (the gateway's). */
export function lazyClientConnection(s: TemporalSettings, extra: Partial<ConnectionOptions> = {}): Connection {
  return Connection.lazy(clientConnectionOptions(s, extra));
}

/** A client connection made now; a failure names the TLS files or the API key source involved. */
export async function connectClient(s: TemporalSettings, extra: Partial<ConnectionOptions> = {}): Promise<Connection> {
  const options = clientConnectionOptions(s, extra);
  try {
    return await Connection.connect(options);
  } catch (err) {
    throw explainConnectFailure(s, temporalSecurity(s), err);
  }
}

/** `NativeConnection` options (workers); the API key is a string here, replaced through setApiKey. */
function nativeConnectionOptions(s: TemporalSettings, extra: Partial<NativeConnectionOptions> = {}): NativeConnectionOptions {
  const security = temporalSecurity(s);
  return { address: s.TEMPORAL_ADDRESS, tls: security.tls, ...(security.apiKey ? { apiKey: security.apiKey.value } : {}), ...extra };
}

/**
 * A worker connection made now, following the API key file. The worker package is loaded here
 * rather than at the top so that the gateway, which imports this module, never loads the Rust core.
 */
export async function connectNative(s: TemporalSettings, extra: Partial<NativeConnectionOptions> = {}): Promise<NativeConnection> {
  const security = temporalSecurity(s);
  const { NativeConnection } = await import('@temporalio/worker');
  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect(nativeConnectionOptions(s, extra));
  } catch (err) {
    throw explainConnectFailure(s, security, err);
  }
  const file = security.apiKey?.file;
  if (file) {
    const source = keySource(file, security.apiKey!.value);
    if (source.current() !== security.apiKey!.value) await connection.setApiKey(source.current());
    const unsubscribe = source.subscribe((key) => void connection.setApiKey(key).catch(() => undefined));
    const close = connection.close.bind(connection);
    connection.close = async () => {
      unsubscribe();
      await close();
    };
  }
  return connection;
}
