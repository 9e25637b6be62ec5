// A small server-sent-events client for tests and benchmarks: opens GET `path` on a loopback
// gateway, parses the text/event-stream as it arrives (events and `:` comments), and lets the
// caller wait for events or for the end of the stream — conditions, never fixed sleeps.
import http from 'node:http';
import { performance } from 'node:perf_hooks';

export interface SseEvent {
  id: string | undefined;
  event: string;
  data: string;
  /** performance.timeOrigin + performance.now() when the event's last line arrived. */
  receivedAt: number;
}

export interface SseStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body of a non-200 answer (JSON error). */
  body: string;
  events: SseEvent[];
  comments: string[];
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  /** Waits until `count` events have arrived (in total), or fails after `timeoutMs`. */
  waitForEvents(count: number, timeoutMs?: number): Promise<SseEvent[]>;
  /** Waits until `count` comments have arrived (in total). */
  waitForComments(count: number, timeoutMs?: number): Promise<string[]>;
  /** Waits for the end of the stream. */
  waitForEnd(timeoutMs?: number): Promise<SseEvent[]>;
  close(): void;
}

const now = () => performance.timeOrigin + performance.now();

export function openEventStream(baseUrl: string, path: string, headers: Record<string, string> = {}, agent?: http.Agent): Promise<SseStream> {
  const url = new URL(path, baseUrl);
  if (url.hostname !== '127.0.0.1') throw new Error(`refusing to open a test stream to ${url.hostname}`);
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { accept: 'text/event-stream', ...headers }, agent }, (res) => {
      const events: SseEvent[] = [];
      const comments: string[] = [];
      const changed = new Set<() => void>();
      const notify = () => changed.forEach((f) => f());
      let done = false;
      let endedResolve!: () => void;
      const ended = new Promise<void>((r) => (endedResolve = r));
      let buffer = '';
      let body = '';
      let current: { id?: string; event?: string; data: string[] } = { data: [] };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (res.statusCode !== 200) {
          body += chunk;
          return;
        }
        buffer += chunk;
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, nl).replace(/\r$/, '');
          buffer = buffer.slice(nl + 1);
          if (line === '') {
            if (current.data.length > 0 || current.event !== undefined) {
              events.push({ id: current.id, event: current.event ?? 'message', data: current.data.join('\n'), receivedAt: now() });
            }
            current = { data: [] };
          } else if (line.startsWith(':')) {
            comments.push(line.slice(1).trim());
          } else {
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'id') current.id = value;
            else if (field === 'event') current.event = value;
            else if (field === 'data') current.data.push(value);
          }
        }
        notify();
      });
      const finish = () => {
        if (done) return;
        done = true;
        endedResolve();
        notify();
      };
      res.on('end', finish);
      res.on('close', finish);
      res.on('error', finish);

      const until = <T>(what: string, check: () => T | undefined, timeoutMs: number): Promise<T> =>
        new Promise((resolveWait, rejectWait) => {
          const test = () => {
            const v = check();
            if (v !== undefined) {
              cleanup();
              resolveWait(v);
            } else if (done) {
              cleanup();
              rejectWait(new Error(`the stream ended before ${what} (events: ${events.map((e) => e.data).join(' | ')})`));
            }
          };
          const timer = setTimeout(() => {
            cleanup();
            rejectWait(new Error(`timed out after ${timeoutMs} ms waiting for ${what} (events so far: ${events.length})`));
          }, timeoutMs);
          const cleanup = () => {
            clearTimeout(timer);
            changed.delete(test);
          };
          changed.add(test);
          test();
        });

      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        get body() {
          return body;
        },
        events,
        comments,
        ended,
        waitForEvents: (count, timeoutMs = 60_000) => until(`${count} events`, () => (events.length >= count ? events.slice(0, count) : undefined), timeoutMs),
        waitForComments: (count, timeoutMs = 60_000) =>
          until(`${count} comments`, () => (comments.length >= count ? comments.slice(0, count) : undefined), timeoutMs),
        waitForEnd: async (timeoutMs = 120_000) => {
          const timeout = new Promise<never>((_r, rej) => setTimeout(() => rej(new Error(`the stream did not end within ${timeoutMs} ms`)), timeoutMs).unref());
          await Promise.race([ended, timeout]);
          return events;
        },
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
  });
}
