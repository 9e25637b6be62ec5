// Headless Chromium (Debian's `chromium`; CHROMIUM_PATH overrides) driven over the DevTools
// protocol on a pipe (--remote-debugging-pipe: JSON messages ending in NUL, the browser reading fd 3
// and writing fd 4), so a test can navigate, fill a form and poll the rendered page for a condition
// instead of sleeping. Host names resolve to nothing: only loopback addresses are reachable.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { waitFor } from './stack.js';
import { chromiumPath, headlessChromiumArgs } from '../../scripts/screenshots/headless-chromium.js';

export interface Page {
  navigate(url: string): Promise<void>;
  /** Evaluates an expression in the page and returns its value (JSON-serialisable). */
  evaluate<T>(expression: string): Promise<T>;
  /** The page's visible text and its code editors' documents. */
  text(): Promise<string>;
  /** Polls the page's text until `check` holds; returns that text. */
  waitForText(what: string, check: (text: string) => boolean, timeoutMs?: number): Promise<string>;
}

export interface Browser {
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

/** `height`: the window's, in pixels (the UI's code views render only the lines in view). */
export async function launchChromium(opts: { height?: number } = {}): Promise<Browser> {
  const profile = await mkdtemp(join(tmpdir(), 'codec-chromium-'));
  const child: ChildProcess = spawn(
    chromiumPath(),
    headlessChromiumArgs([`--user-data-dir=${profile}`, `--window-size=1600,${opts.height ?? 1000}`, '--remote-debugging-pipe', 'about:blank']),
    { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const toBrowser = child.stdio[3] as Writable;
  const fromBrowser = child.stdio[4] as Readable;
  let nextId = 1;
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  let buffered = Buffer.alloc(0);
  fromBrowser.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (let end = buffered.indexOf(0); end >= 0; end = buffered.indexOf(0)) {
      const msg = JSON.parse(buffered.subarray(0, end).toString('utf8')) as { id?: number; result?: unknown; error?: { message: string } };
      buffered = buffered.subarray(end + 1);
      const p = msg.id !== undefined ? pending.get(msg.id) : undefined;
      if (!p) continue;
      pending.delete(msg.id!);
      if (msg.error) p.reject(new Error(`CDP: ${msg.error.message}`));
      else p.resolve(msg.result);
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => {
    for (const p of pending.values()) p.reject(new Error(`chromium exited: ${stderr}`));
    pending.clear();
  });
  const send = (method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<any> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      toBrowser.write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + '\0');
    });

  return {
    async newPage() {
      const { targetId } = (await send('Target.createTarget', { url: 'about:blank' })) as { targetId: string };
      const { sessionId } = (await send('Target.attachToTarget', { targetId, flatten: true })) as { sessionId: string };
      const evaluate = async <T>(expression: string): Promise<T> => {
        const r = (await send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true }, sessionId)) as {
          result: { value?: T };
          exceptionDetails?: { text: string };
        };
        if (r.exceptionDetails) throw new Error(`page: ${r.exceptionDetails.text}`);
        return r.result.value as T;
      };
      // The visible text, plus what each CodeMirror editor on the page (the UI's payload views)
      // shows while scrolled from top to bottom: an editor renders only the lines in view.
      const text = () =>
        evaluate<string>(`(async () => {
          let out = document.body ? document.body.innerText : '';
          for (const s of document.querySelectorAll('.cm-scroller')) {
            for (let y = 0, n = 0; y <= s.scrollHeight && n < 50; y += 150, n++) {
              s.scrollTop = y;
              await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 10)));
              out += '\\n' + s.innerText;
            }
          }
          return out;
        })()`);
      return {
        async navigate(url) {
          const r = (await send('Page.navigate', { url }, sessionId)) as { errorText?: string };
          if (r.errorText) throw new Error(`navigate ${url}: ${r.errorText}`);
          await waitFor('the page to load', async () => (await evaluate<string>('document.readyState')) === 'complete', 30_000, 100);
        },
        evaluate,
        text,
        async waitForText(what, check, timeoutMs = 60_000) {
          let last = '';
          try {
            return await waitFor(
              what,
              async () => {
                last = await text();
                return check(last) ? last : undefined;
              },
              timeoutMs,
              250,
            );
          } catch (err) {
            throw new Error(`${(err as Error).message}; the page read:\n${last.slice(0, 3000)}`);
          }
        },
      };
    },
    async close() {
      await send('Browser.close').catch(() => undefined);
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
      await rm(profile, { recursive: true, force: true });
    },
  };
}
