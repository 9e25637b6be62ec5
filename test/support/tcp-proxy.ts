// A loopback TCP proxy a test puts between a client (a worker fleet's database pool) and a real
// server, so the test can take the server away and give it back: cut() closes every proxied
// connection and refuses new ones (each is accepted and closed at once, as a server that is down
// answers), restore() lets connections through again. Loopback only, both ends.
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  /** The proxy's own address, 127.0.0.1:port. */
  host: string;
  port: number;
  /** Connections refused while cut (a client trying to reach the server). */
  readonly refused: number;
  /** Connections passed through to the server since the proxy started. */
  readonly forwarded: number;
  readonly isCut: boolean;
  /** Closes every open connection (both sides) and refuses new ones until restore(). */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

const loopback = (host: string) => host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  if (!loopback(target.host)) throw new Error(`the test proxy only forwards to loopback, not ${target.host}`);
  const open = new Set<net.Socket>();
  let cutOff = false;
  let refused = 0;
  let forwarded = 0;

  const server = net.createServer((client) => {
    if (cutOff) {
      refused++;
      client.destroy();
      return;
    }
    forwarded++;
    const upstream = net.connect({ host: target.host.replace(/^\[|\]$/g, ''), port: target.port });
    open.add(client);
    open.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    host: '127.0.0.1',
    port,
    get refused() {
      return refused;
    },
    get forwarded() {
      return forwarded;
    },
    get isCut() {
      return cutOff;
    },
    cut() {
      cutOff = true;
      for (const s of open) s.destroy();
      open.clear();
    },
    restore() {
      cutOff = false;
    },
    async close() {
      for (const s of open) s.destroy();
      open.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `url` (a postgres:// URL on loopback) with its host and port replaced by the proxy's. */
export function throughProxy(url: string, proxy: Pick<TcpProxy, 'host' | 'port'>): string {
  const u = new URL(url);
  u.hostname = proxy.host;
  u.port = String(proxy.port);
  return u.toString();
}

/** The host and port a postgres:// URL points at (5432 when it names none). */
export function targetOf(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || 5432) };
}
