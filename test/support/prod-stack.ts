// Access to the `prod` profile of scripts/stack.sh (scripts/stack-prod.sh) for the suite that runs
// against it: scripts/test.sh starts or reuses the profile and hands its `export` lines over in
// PROD_STACK_ENV; this module reads them and can run `stack.sh up prod` again (which restarts
// whatever process of the topology is missing and reuses the rest). The suites share that one stack:
// each holds the profile's suite lock (lockProdStack) from before it touches the stack to its end.
import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, type Config } from '../../shared/config.js';

const stackSh = fileURLToPath(new URL('../../../scripts/stack.sh', import.meta.url));

/** The variables of `export NAME='value'` lines, as scripts/stack.sh prints them. */
export function parseExports(out: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const line of out.split('\n')) {
    const m = /^export ([A-Z0-9_]+)='(.*)'$/.exec(line);
    if (m) vars[m[1]!] = m[2]!;
  }
  return vars;
}

/** Runs scripts/stack.sh with exactly the given environment (no test-stack variables leak in). */
export function runStackScript(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 600_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', [stackSh, ...args], { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

export interface ProdStack {
  vars: Record<string, string>;
  gateways: string[];
  stateDir: string;
  /** The profile's service configuration (its database, Temporal server and bucket). */
  config: Config;
  /** The profile's TEMPORAL_TLS_* variables (its mTLS client pair and CA), for processes and configs a test makes. */
  temporalTls: Record<string, string>;
  /** The same as `temporal` CLI flags. */
  temporalCliTls: string[];
  /** The pid of one of the profile's processes (`worker-local-1`, `gateway-2`, …), from its pid file. */
  pid(name: string): Promise<number>;
  /** The log of one of the profile's gateway or worker processes. */
  log(name: string): Promise<string>;
  /** The environment one of the profile's processes runs with (Linux /proc). */
  environment(name: string): Promise<Record<string, string>>;
  /** `scripts/stack.sh up prod` for the same state directory (`env`: e.g. PROD_DIST, another build to deploy). */
  up(env?: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }>;
  /** A build's directory of the profile ($STATE/builds/<id>: app/, pid files, logs/). */
  buildDir(buildId: string): string;
}

export function prodStack(): ProdStack {
  const raw = process.env.PROD_STACK_ENV;
  if (!raw) throw new Error('PROD_STACK_ENV is not set: run this suite with `npm test -- prod-profile`, which starts the prod profile');
  const vars = parseExports(raw);
  for (const v of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_UI_URL', 'S3_ENDPOINT', 'GATEWAY_URLS', 'STACK_STATE_DIR']) {
    if (!vars[v]) throw new Error(`PROD_STACK_ENV has no ${v}`);
  }
  const stateDir = vars.STACK_STATE_DIR!;
  const config = loadConfig({ ...vars, NODE_ENV: 'test', LOG_LEVEL: 'silent', TASK_QUEUE_PREFIX: 'media' });
  const temporalTls = Object.fromEntries(Object.entries(vars).filter(([k]) => k.startsWith('TEMPORAL_TLS')));
  const cliFlag = { TEMPORAL_TLS_CA_FILE: '--tls-ca-path', TEMPORAL_TLS_CERT_FILE: '--tls-cert-path', TEMPORAL_TLS_KEY_FILE: '--tls-key-path' } as const;
  const temporalCliTls = Object.entries(cliFlag).flatMap(([v, flag]) => (vars[v] ? [flag, vars[v]] : []));
  return {
    vars,
    temporalTls,
    temporalCliTls,
    gateways: vars.GATEWAY_URLS!.split(' '),
    stateDir,
    config,
    async pid(name) {
      return Number((await readFile(join(stateDir, `${name}.pid`), 'utf8')).trim());
    },
    async log(name) {
      return readFile(join(stateDir, 'logs', `${name}.log`), 'utf8');
    },
    async environment(name) {
      const pid = Number((await readFile(join(stateDir, `${name}.pid`), 'utf8')).trim());
      const raw = await readFile(`/proc/${pid}/environ`, 'utf8');
      return Object.fromEntries(
        raw
          .split('\0')
          .filter(Boolean)
          .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      );
    },
    up(extra = {}) {
      const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, MEDIA_GEN_HOME: dirname(stateDir), ...extra };
      if (process.env.MEDIA_GEN_CACHE) env.MEDIA_GEN_CACHE = process.env.MEDIA_GEN_CACHE;
      return runStackScript(['up', 'prod'], env);
    },
    buildDir: (buildId) => join(stateDir, 'builds', buildId),
  };
}

/** Whether a process (not necessarily our child) is still alive. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The lock every prod-profile suite holds while it uses the stack: a file in the profile's state directory. */
export const suiteLockPath = (stateDir: string) => join(stateDir, 'suites.lock');

/**
 * Waits for the profile's suite lock (flock(1) on suiteLockPath, held by a child process until this
 * process releases it or exits, so a crashed suite never leaves it held), then runs `stack.sh up
 * prod` again under it (another suite may have changed the stack since scripts/test.sh started it)
 * and returns the stack as that `up` printed it. Released by `release()` (the suite's last `after`)
 * or when the suite's process exits. Call it in the suite's `before`, with a timeout long enough to
 * wait for the other suites.
 */
export async function lockProdStack(opts: { waitMs?: number } = {}): Promise<ProdStack & { release(): void }> {
  const first = prodStack();
  const holder = spawn(
    'flock',
    ['-w', String(Math.ceil((opts.waitMs ?? 3_600_000) / 1000)), suiteLockPath(first.stateDir), 'sh', '-c', 'echo locked; exec cat'],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const release = () => {
    holder.stdin.end();
    holder.kill();
  };
  process.once('exit', release);
  await new Promise<void>((resolve, reject) => {
    holder.stdout.once('data', () => resolve());
    holder.once('exit', (code) => reject(new Error(`could not take the prod profile's suite lock ${suiteLockPath(first.stateDir)} (flock exited ${code})`)));
  });
  const up = await first.up();
  if (up.code !== 0) {
    release();
    throw new Error(`stack.sh up prod failed under the suite lock:\n${up.stderr}`);
  }
  process.env.PROD_STACK_ENV = up.stdout;
  return { ...prodStack(), release };
}
