// Socket-level limits of the gateway's HTTP server: per-client-address connection caps (Node's
// maxConnections is one ceiling for every client together, which one client could fill alone) and
// the request timeouts that cut idle and trickled connections.
import type { Server } from 'node:http';
import type { Config } from '../shared/config.js';

/** Node's options for the timeouts: a request's headers, a whole request, an idle keep-alive socket. */
export function serverTimeouts(config: Pick<Config, 'GATEWAY_HEADERS_TIMEOUT_MS' | 'GATEWAY_REQUEST_TIMEOUT_MS' | 'GATEWAY_KEEP_ALIVE_TIMEOUT_MS'>) {
  // Node refuses a header timeout longer than the request timeout.
  const headersTimeout = Math.min(config.GATEWAY_HEADERS_TIMEOUT_MS, config.GATEWAY_REQUEST_TIMEOUT_MS);
  return {
    headersTimeout,
    requestTimeout: config.GATEWAY_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.GATEWAY_KEEP_ALIVE_TIMEOUT_MS,
    // How often Node looks for requests past those timeouts (its default, 30 s, would let a
    // trickled request live that much longer than the header timeout).
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(headersTimeout / 4))),
  };
}

/**
 * Drops a new socket when its client address already holds `max` of them. `exempt` says which
 * peers are proxies (their sockets carry many clients; the proxy limits those itself). Returns the
 * open count of an address (for tests and metrics).
 */
export function limitConnectionsPerClient(server: Server, max: number, exempt: (address: string) => boolean): (address: string) => number {
  const open = new Map<string, number>();
  server.on('connection', (socket) => {
    const address = socket.remoteAddress;
    if (!address || exempt(address)) return;
    const count = (open.get(address) ?? 0) + 1;
    if (count > max) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  });
  return (address) => open.get(address) ?? 0;
}
