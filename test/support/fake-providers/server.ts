// A tiny scriptable HTTP server for the provider fakes: node:http on 127.0.0.1, port 0. Each fake
// names its operations ("submit", "status", …); a test can script the next N answers of an
// operation (errors, 429s with reset hints, malformed bodies) before the fake's normal behaviour.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string or Buffer as is. */
  body?: unknown;
  /** Wait this long before answering (to exercise client timeouts). */
  delayMs?: number;
  /** Answer only once this settles (a test releases a held answer). */
  until?: Promise<unknown>;
}

export interface RecordedRequest {
  op: string;
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  json: unknown;
}

export type Route = (req: RecordedRequest) => Answer | Promise<Answer>;

export class FakeServer {
  url = '';
  readonly requests: RecordedRequest[] = [];
  private readonly scripts = new Map<string, Answer[]>();
  /** Operations answered the same way until `up` (an outage), after any scripted answers. */
  private readonly outages = new Map<string, Answer>();
  /** Answers of normally served requests held back until their promise settles (holdAnswer). */
  private readonly held = new Map<string, Promise<unknown>[]>();
  private server: http.Server | undefined;
  /**
   * Provider model ids this fake no longer serves (loseModel): its model endpoints answer for them as
   * the provider documents a missing model (a 404, or a list without it). Only the model endpoints:
   * submits still go through, as a probe is what must find the loss.
   */
  readonly lostModels = new Set<string>();

  constructor(
    /** Names the operation of a request, or undefined for 404. */
    private readonly classify: (method: string, path: string) => string | undefined,
    private readonly route: Route,
  ) {}

  /** The next `times` requests of `op` get `answer` instead of the fake's normal behaviour. */
  script(op: string, answer: Answer, times = 1): this {
    const q = this.scripts.get(op) ?? [];
    for (let i = 0; i < times; i++) q.push(answer);
    this.scripts.set(op, q);
    return this;
  }

  /**
   * The next request of `op` is served as usual (a submit is accepted, and paid) but its answer
   * leaves only once `until` settles: the window between a provider accepting a call and the caller
   * hearing of it.
   */
  holdAnswer(op: string, until: Promise<unknown>): this {
    const q = this.held.get(op) ?? [];
    q.push(until);
    this.held.set(op, q);
    return this;
  }

  /** Every request of each `op` gets `answer` until `up` (a provider outage). */
  down(ops: readonly string[], answer: Answer): this {
    for (const op of ops) this.outages.set(op, answer);
    return this;
  }

  /** Ends the outage of `ops` (all when none given). */
  up(ops?: readonly string[]): this {
    if (!ops) this.outages.clear();
    for (const op of ops ?? []) this.outages.delete(op);
    return this;
  }

  /** The provider stops listing `id` on its model endpoints (a retired model). */
  loseModel(id: string): this {
    this.lostModels.add(id);
    return this;
  }

  /** The provider lists `id` again (every lost model when none given). */
  restoreModel(id?: string): this {
    if (id === undefined) this.lostModels.clear();
    else this.lostModels.delete(id);
    return this;
  }

  /** Names a request to the provider's model get/list endpoints 'models' (fakes of providers that document one override it). */
  protected modelsOp(_method: string, _path: string): 'models' | undefined {
    return undefined;
  }

  /** Answers a request of the 'models' operation, as the provider documents its model endpoints. */
  protected modelsAnswer(_req: RecordedRequest): Answer {
    return { status: 404 };
  }

  requestsOf(op: string): RecordedRequest[] {
    return this.requests.filter((r) => r.op === op);
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    return this;
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    const op = this.classify(req.method ?? 'GET', u.pathname) ?? this.modelsOp(req.method ?? 'GET', u.pathname);
    let json: unknown;
    try {
      json = body.length ? JSON.parse(body.toString('utf8')) : undefined;
    } catch {
      json = undefined;
    }
    const rec: RecordedRequest = {
      op: op ?? 'unknown',
      method: req.method ?? 'GET',
      path: u.pathname,
      query: u.searchParams,
      headers: req.headers,
      body,
      json,
    };
    this.requests.push(rec);
    let answer: Answer;
    try {
      if (!op) answer = { status: 404, body: { detail: 'Not Found' } };
      else answer = this.scripts.get(op)?.shift() ?? this.outages.get(op) ?? (op === 'models' ? this.modelsAnswer(rec) : await this.route(rec));
    } catch (err) {
      answer = { status: 500, body: { detail: `fake server error: ${String(err)}` } };
    }
    if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs));
    if (answer.until) await answer.until;
    const held = op ? this.held.get(op)?.shift() : undefined;
    if (held) await held;
    if (res.destroyed) return;
    const headers = { ...(answer.headers ?? {}) };
    let payload: Buffer | string = '';
    if (Buffer.isBuffer(answer.body) || typeof answer.body === 'string') payload = answer.body;
    else if (answer.body !== undefined) {
      payload = JSON.stringify(answer.body);
      headers['content-type'] ??= 'application/json';
    }
    res.writeHead(answer.status, headers);
    res.end(payload);
  }
}

export const json = (status: number, body: unknown, headers?: Record<string, string>): Answer => ({ status, body, headers });

/** A 1×1 PNG, for fakes that answer images. */
export const tinyPng = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
