// The gateway's last-resort handler (api/last-resort.ts), in a process of its own: an uncaught
// error one request owns ends that request with a 500 and the process keeps serving; an error no
// request owns stops the process (exit code from onFatal). The log line carries no request data.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { LOGGED_REQUEST_ERRORS_PER_MINUTE } from '../../api/last-resort.js';

const appPath = fileURLToPath(new URL('../support/last-resort-app.js', import.meta.url));
const SECRET = 'sk-secret-in-the-body-0123456789';

describe('last-resort handler', () => {
  let child: ChildProcess;
  let base: string;
  let output = '';

  before(async () => {
    child = spawn(process.execPath, [appPath], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (output += d));
    const deadline = Date.now() + 20_000;
    while (!/port (\d+)/.test(output)) {
      assert.ok(Date.now() < deadline && child.exitCode === null, `the app did not start: ${output}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    base = `http://127.0.0.1:${/port (\d+)/.exec(output)![1]}`;
  });

  after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });

  async function waitForOutput(pattern: RegExp): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!pattern.test(output)) {
      assert.ok(Date.now() < deadline, `no log line matching ${pattern}: ${output.slice(-1000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  const pidOf = async () => ((await (await fetch(`${base}/ok`)).json()) as { pid: number }).pid;

  test('an error thrown by a request stream listener: that request gets 500, the same process serves the next', async () => {
    const pid = await pidOf();
    const r = await fetch(`${base}/throw-in-stream`, {
      method: 'POST',
      body: JSON.stringify({ token: SECRET }),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(r.status, 500);
    const body = (await r.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'internal_error');
    assert.equal(await pidOf(), pid);
    assert.match(output, /uncaught error in a request: that request was ended/);
    assert.match(output, /thrown by a request stream listener/);
  });

  test('a rejection no one awaited inside a request: that request gets 500, the process keeps serving', async () => {
    const pid = await pidOf();
    const r = await fetch(`${base}/reject-in-request`, { method: 'POST', body: SECRET });
    assert.equal(r.status, 500);
    assert.equal(await pidOf(), pid);
  });

  test('the log line names the route pattern, never the raw path or a token in the error text', async () => {
    const token = 'tok_Secret0123456789abcdef';
    const r = await fetch(`${base}/media/uploads/${token}`, { method: 'POST', body: 'x' });
    assert.equal(r.status, 500);
    await waitForOutput(/\/media\/uploads\/:token/);
    assert.doesNotMatch(output, new RegExp(token), 'no bearer token in the log');
  });

  test('however many request errors one client causes, the process keeps serving; past the log budget they are counted, not logged', async () => {
    const pid = await pidOf();
    const before = output.length;
    const n = LOGGED_REQUEST_ERRORS_PER_MINUTE * 3;
    for (let i = 0; i < n; i++) {
      const r = await fetch(`${base}/throw-in-stream`, { method: 'POST', body: 'x' });
      assert.equal(r.status, 500);
    }
    assert.equal(await pidOf(), pid, 'the same process serves after every one of them');
    const logged = output.slice(before).match(/uncaught error in a request/g)?.length ?? 0;
    // The run may straddle a minute's turn: at most two minutes' budgets.
    assert.ok(logged <= 2 * LOGGED_REQUEST_ERRORS_PER_MINUTE, `at most the budget is logged per minute (${logged} of ${n})`);
    assert.ok(logged >= 1);
  });

  test('an error no request owns stops the process with the fatal exit', async () => {
    const exited = once(child, 'exit');
    const r = await fetch(`${base}/throw-outside`);
    assert.equal(r.status, 200);
    const [code] = await exited;
    assert.equal(code, 70);
    assert.match(output, /uncaught error outside any request: stopping/);
    assert.doesNotMatch(output, new RegExp(SECRET), 'no request data in the log');
  });
});
