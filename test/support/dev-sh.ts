// `npm run dev` (scripts/dev.sh) as a child process of a test, against the test stack's services
// (reused through the variables) and a fresh database and state directory of its own.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, waitFor, type TestDatabase } from './stack.js';
import { randomToken } from '../../shared/ids.js';

const devSh = fileURLToPath(new URL('../../../scripts/dev.sh', import.meta.url));

export interface DevSh {
  t: TestDatabase;
  /** MEDIA_GEN_HOME of the run: the dev profile's state is `<home>/dev`. */
  home: string;
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exit: Promise<number | null>;
  /** Waits for the summary (failing at once, with dev.sh's words, if it exits); answers what it printed. */
  summary(timeoutMs: number): Promise<{ base: string; key: string; project: string }>;
  /** SIGTERM if still running; removes the state directory and the database. */
  close(): Promise<void>;
}

export async function startDevSh(env: NodeJS.ProcessEnv): Promise<DevSh> {
  const t = await createTestDatabase();
  const home = await mkdtemp(join(tmpdir(), 'dev-sh-'));
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: t.url,
    MEDIA_GEN_HOME: home,
    DEV_SKIP_BUILD: '1', // npm test has just built dist/
    PORT: '0',
    // Its own task queues, so its worker never picks up another suite's tasks.
    TASK_QUEUE_PREFIX: `t-dev-${randomToken(8)}`,
    LOG_LEVEL: 'warn',
    ...env,
  };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
  const child = spawn('bash', [devSh], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  return {
    t,
    home,
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exit,
    async summary(timeoutMs) {
      // An exit ends the wait at once (waitFor retries a check that throws), with dev.sh's own words.
      const outcome = await waitFor(
        'dev.sh to print its summary',
        () => (child.exitCode !== null ? 'exited' : stdout.includes('Ctrl-C stops') && 'ready'),
        timeoutMs,
        200,
      ).catch((err: Error) => {
        throw new Error(`${err.message}\nstderr: ${stderr.slice(-2000)}`);
      });
      if (outcome === 'exited') assert.fail(`dev.sh exited with ${child.exitCode}: ${stderr.slice(-2000)}`);
      const base = /Base URL\s+(http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(stdout)?.[1];
      const key = /Demo API key\s+(mg_live_\S+)/.exec(stdout)?.[1];
      const project = /Demo project id\s+(prj_\S+)/.exec(stdout)?.[1];
      assert.ok(base && key && project, stdout);
      return { base, key, project };
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exit;
      }
      await rm(home, { recursive: true, force: true });
      await t.drop();
    },
  };
}
