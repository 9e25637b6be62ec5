// A webhook receiver on 127.0.0.1 for the webhook suites: records every request (path, headers,
// body, arrival time) and answers as the test scripts it, per path or per request.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Date.now() when the request's body had arrived. */
  at: number;
  /** What the receiver answered ('hang': nothing). */
  answer: number | 'hang';
}

export type Answer = number | 'hang';

export class Receiver {
  readonly received: Received[] = [];
  /** Per path: status codes to answer in turn (the last repeats); 'hang' never answers. */
  readonly scripts = new Map<string, Answer[]>();
  /** Asked first, for every request: an answer, or undefined to use the path's script (default 204). */
  answerWith: ((request: Omit<Received, 'answer'>, earlier: Received[]) => Answer | undefined) | null = null;
  private readonly hanging: ServerResponse[] = [];
  private server!: Server;
  base = '';

  async start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '/';
        const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : (v ?? '')]));
        const request = { path, headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
        let answer = this.answerWith?.(request, this.received);
        if (answer === undefined) {
          const script = this.scripts.get(path) ?? [204];
          answer = script.length > 1 ? script.shift()! : script[0]!;
        }
        this.received.push({ ...request, answer });
        if (answer === 'hang') this.hanging.push(res);
        else res.writeHead(answer).end();
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}
