// The suites that run against a process profile of scripts/stack.sh — `prod` (scripts/stack-prod.sh:
// every gateway and worker fleet its own process, mTLS to Temporal's own server, sealed payloads) and
// `cluster` (scripts/stack-cluster.sh: the same processes twice over, Temporal as separate services,
// Postgres under Patroni) — reach it through this one harness. scripts/test.sh starts or reuses the
// profile and hands its `export` lines over in PROD_STACK_ENV / CLUSTER_STACK_ENV; `up()` runs
// `stack.sh up <profile>` again, which restarts whatever process is missing and reuses the rest. The
// suites of a profile share that one stack: each holds the profile's suite lock (lockProfile) from
// before it touches the stack to its end, and a suite's own settings go in the profile's overrides
// file, under which `up` replaces every gateway and worker (openProfileSuite). The in-process stack
// the other suites use is ./stack.ts with ./services.ts; the cluster's fault tool is ./cluster-faults.ts.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, type Connection } from '@temporalio/client';
import { loadConfig, type Config } from '../../shared/config.js';
import { connectClient } from '../../shared/temporal-connection.js';
import { createDb, type Database } from '../../db/index.js';
import { codecDataConverter } from '../../codec/payload-codec.js';

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

/** Whether a process (not necessarily our child) is still alive. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export type ProfileName = 'prod' | 'cluster';

/** Per profile: the variable scripts/test.sh hands it over in, the ones it must hold, how long an `up` may take. */
const profiles = {
  prod: {
    envVar: 'PROD_STACK_ENV',
    run: '`npm test -- prod-profile`, which starts the prod profile',
    needs: ['TEMPORAL_UI_URL'],
    upTimeoutMs: 600_000,
  },
  cluster: {
    envVar: 'CLUSTER_STACK_ENV',
    run: '`npm run test:cluster` (or `npm test -- cluster-`), which starts the cluster profile',
    needs: ['CLUSTER_ETCD_PORT'],
    upTimeoutMs: 900_000,
  },
} as const satisfies Record<ProfileName, { envVar: string; run: string; needs: readonly string[]; upTimeoutMs: number }>;

export interface ProfileStack {
  profile: ProfileName;
  vars: Record<string, string>;
  gateways: string[];
  stateDir: string;
  /** The profile's service configuration (its database endpoint, Temporal frontend and bucket). */
  config: Config;
  /** The profile's TEMPORAL_TLS_* variables (its mTLS client pair and CA), for processes and configs a test makes. */
  temporalTls: Record<string, string>;
  /** The same as `temporal` CLI flags. */
  temporalCliTls: string[];
  /** The pid of one of the profile's processes (`worker-local-1`, `gateway-2`, `temporal-history-1`, …), from its pid file. */
  pid(name: string): Promise<number>;
  /** The log of one of the profile's processes. */
  log(name: string): Promise<string>;
  /** The environment one of the profile's processes runs with (Linux /proc). */
  environment(name: string): Promise<Record<string, string>>;
  /**
   * `scripts/stack.sh up <profile>` for the same state directory (`env`: e.g. PROD_DIST, another build
   * to deploy); on success the profile's variables are what it printed (read the stack again for them).
   */
  up(env?: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }>;
  /** A build's directory of the profile ($STATE/builds/<id>: app/, pid files, logs/). */
  buildDir(buildId: string): string;
}

/** The profile as scripts/test.sh (or the suite's last `up`) left it. */
export function profileStack(profile: ProfileName): ProfileStack {
  const spec = profiles[profile];
  const raw = process.env[spec.envVar];
  if (!raw) throw new Error(`${spec.envVar} is not set: run this suite with ${spec.run}`);
  const vars = parseExports(raw);
  for (const v of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'S3_ENDPOINT', 'GATEWAY_URLS', 'STACK_STATE_DIR', ...spec.needs]) {
    if (!vars[v]) throw new Error(`${spec.envVar} has no ${v}`);
  }
  const stateDir = vars.STACK_STATE_DIR!;
  const config = loadConfig({ ...vars, NODE_ENV: 'test', LOG_LEVEL: 'silent', TASK_QUEUE_PREFIX: 'media' });
  const temporalTls = Object.fromEntries(Object.entries(vars).filter(([k]) => k.startsWith('TEMPORAL_TLS')));
  const cliFlag = { TEMPORAL_TLS_CA_FILE: '--tls-ca-path', TEMPORAL_TLS_CERT_FILE: '--tls-cert-path', TEMPORAL_TLS_KEY_FILE: '--tls-key-path' } as const;
  const temporalCliTls = Object.entries(cliFlag).flatMap(([v, flag]) => (vars[v] ? [flag, vars[v]] : []));
  const pid = async (name: string) => Number((await readFile(join(stateDir, `${name}.pid`), 'utf8')).trim());
  return {
    profile,
    vars,
    temporalTls,
    temporalCliTls,
    gateways: vars.GATEWAY_URLS!.split(' '),
    stateDir,
    config,
    pid,
    log: (name) => readFile(join(stateDir, 'logs', `${name}.log`), 'utf8'),
    async environment(name) {
      const raw = await readFile(`/proc/${await pid(name)}/environ`, 'utf8');
      return Object.fromEntries(
        raw
          .split('\0')
          .filter(Boolean)
          .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      );
    },
    async up(extra = {}) {
      const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, MEDIA_GEN_HOME: dirname(stateDir), ...extra };
      if (process.env.MEDIA_GEN_CACHE) env.MEDIA_GEN_CACHE = process.env.MEDIA_GEN_CACHE;
      const r = await runStackScript(['up', profile], env, spec.upTimeoutMs);
      if (r.code === 0) process.env[spec.envVar] = r.stdout;
      return r;
    },
    buildDir: (buildId) => join(stateDir, 'builds', buildId),
  };
}

/** The lock every suite of a profile holds while it uses the stack: a file in the profile's state directory. */
export const suiteLockPath = (stateDir: string) => join(stateDir, 'suites.lock');

/**
 * Waits for the profile's suite lock (flock(1) on suiteLockPath, held by a child process until this
 * process releases it or exits, so a crashed suite never leaves it held), then runs `stack.sh up` again
 * under it (another suite may have changed the stack since scripts/test.sh started it) and returns
 * the stack as that `up` printed it. Released by `release()` (the suite's last `after`) or when the
 * suite's process exits. Call it in the suite's `before`, with a timeout long enough to wait for the
 * other suites.
 */
export async function lockProfile(profile: ProfileName, opts: { waitMs?: number } = {}): Promise<ProfileStack & { release(): void }> {
  const first = profileStack(profile);
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
    holder.once('exit', (code) =>
      reject(new Error(`could not take the ${profile} profile's suite lock ${suiteLockPath(first.stateDir)} (flock exited ${code})`)),
    );
  });
  const up = await first.up();
  if (up.code !== 0) {
    release();
    throw new Error(`stack.sh up ${profile} failed under the suite lock:\n${up.stderr}`);
  }
  return { ...profileStack(profile), release };
}

export interface ProfileSuite {
  /** The stack as the suite's last `up` printed it. */
  stack: ProfileStack & { release(): void };
  db: Database;
  connection: Connection;
  /** A client of the profile's Temporal server that opens the payloads its processes seal. */
  temporal: Client;
  /** `stack.sh up <profile>` (`env`: e.g. PROD_DIST, another build), which must succeed; answers its messages. */
  up(env?: Record<string, string>): Promise<string>;
  /** Back to the profile's own settings (then `restore`, the suite's own clean-up on the stack), and every handle closed. */
  close(restore?: () => Promise<unknown>): Promise<void>;
}

/**
 * Locks the profile for one suite, with its database and Temporal server open. With `overrides`, runs
 * the suite under them (`beforeUp` runs first, with the database open: e.g. state an earlier run left
 * behind): every process is replaced, which the profile's messages must say, and closing brings the
 * profile back to its own settings for the suites that follow.
 */
export async function openProfileSuite(
  profile: ProfileName,
  opts: { overrides?: Record<string, string>; beforeUp?: (db: Database) => Promise<unknown> } = {},
): Promise<ProfileSuite> {
  // The suite lock first: no other suite of the profile uses the stack until this one ends.
  const locked = await lockProfile(profile);
  const db = createDb(locked.config.DATABASE_URL, 5);
  const connection = await connectClient(locked.config);
  const temporal = new Client({ connection, namespace: 'default', ...codecDataConverter(locked.config) });
  const overridesFile = join(locked.stateDir, 'overrides.env');
  const suite: ProfileSuite = {
    stack: locked,
    db,
    connection,
    temporal,
    async up(env) {
      const r = await suite.stack.up(env);
      assert.equal(r.code, 0, r.stderr);
      suite.stack = { ...profileStack(profile), release: locked.release };
      return r.stderr;
    },
    async close(restore) {
      try {
        if (opts.overrides) {
          await rm(overridesFile, { force: true });
          await suite.up();
        }
        await restore?.();
      } finally {
        await connection.close();
        await db.destroy();
        locked.release();
      }
    },
  };
  if (!opts.overrides) return suite;
  try {
    await writeFile(
      overridesFile,
      Object.entries(opts.overrides)
        .map(([k, v]) => `${k}=${v}\n`)
        .join(''),
      { mode: 0o600 },
    );
    await opts.beforeUp?.(db);
    assert.match(await suite.up(), /the overrides changed/);
    return suite;
  } catch (err) {
    // A suite that could not start still hands the profile back as it found it.
    await suite.close().catch(() => undefined);
    throw err;
  }
}
