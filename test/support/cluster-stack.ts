// Access to the `cluster` profile of scripts/stack.sh (scripts/stack-cluster.sh) for the suites that
// run against it: scripts/test.sh starts or reuses the profile and hands its `export` lines over in
// CLUSTER_STACK_ENV. The fault tools are scripts/cluster/faults.sh, run here on the same state
// directory; `up()` runs `stack.sh up cluster` again, which starts whatever a fault took away.
import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, type Config } from '../../shared/config.js';
import { createDb, type Database } from '../../db/index.js';
import { parseExports, runStackScript } from './prod-stack.js';

const faultsSh = fileURLToPath(new URL('../../../scripts/cluster/faults.sh', import.meta.url));

export interface ClusterStack {
  vars: Record<string, string>;
  gateways: string[];
  stateDir: string;
  /** The profile's service configuration: its Postgres endpoint (HAProxy), Temporal load balancer and bucket. */
  config: Config;
  /** scripts/cluster/faults.sh with these arguments; answers its output (it fails the test when the tool fails). */
  fault(...args: string[]): Promise<string>;
  pid(name: string): Promise<number>;
  /** The node Patroni names leader (pg-1 or pg-2). */
  leader(): Promise<string>;
  /** `stack.sh up cluster` on the same state directory; answers its messages (stderr), which must succeed. */
  up(): Promise<string>;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(cmd, args, { env, timeout: timeoutMs }, (err, stdout, stderr) =>
      err ? reject(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stderr}`)) : resolve(stdout + stderr),
    ),
  );
}

export function clusterStack(): ClusterStack {
  const raw = process.env.CLUSTER_STACK_ENV;
  if (!raw)
    throw new Error('CLUSTER_STACK_ENV is not set: run this suite with `npm run test:cluster` (or `npm test -- cluster-`), which starts the cluster profile');
  const vars = parseExports(raw);
  for (const v of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'S3_ENDPOINT', 'GATEWAY_URLS', 'STACK_STATE_DIR', 'CLUSTER_ETCD_PORT']) {
    if (!vars[v]) throw new Error(`CLUSTER_STACK_ENV has no ${v}`);
  }
  const stateDir = vars.STACK_STATE_DIR!;
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, MEDIA_GEN_HOME: dirname(stateDir), STACK_STATE_DIR: stateDir };
  if (process.env.MEDIA_GEN_CACHE) env.MEDIA_GEN_CACHE = process.env.MEDIA_GEN_CACHE;
  const fault = (...args: string[]) => run('bash', [faultsSh, ...args], env);
  return {
    vars,
    gateways: vars.GATEWAY_URLS!.split(' '),
    stateDir,
    config: loadConfig({ ...vars, NODE_ENV: 'test', LOG_LEVEL: 'silent', TASK_QUEUE_PREFIX: 'media' }),
    fault,
    pid: async (name) => Number((await fault('pid', name)).trim()),
    leader: () => leaderOf(vars),
    async up() {
      const r = await runStackScript(['up', 'cluster'], { ...env, STACK_STATE_DIR: undefined }, 900_000);
      if (r.code !== 0) throw new Error(`stack.sh up cluster failed:\n${r.stderr}`);
      process.env.CLUSTER_STACK_ENV = r.stdout;
      return r.stderr;
    },
  };
}

/** The leader key Patroni keeps in etcd (its v3 JSON gateway). */
async function leaderOf(vars: Record<string, string>): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${vars.CLUSTER_ETCD_PORT}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: Buffer.from('/service/mediagen-cluster/leader').toString('base64') }),
  });
  const kvs = ((await res.json()) as { kvs?: { value: string }[] }).kvs ?? [];
  return kvs[0] ? Buffer.from(kvs[0].value, 'base64').toString() : '';
}

export interface ClusterSuite {
  stack: ClusterStack;
  db: Database;
  close(): Promise<void>;
}

/**
 * Runs the profile's gateways and workers under `overrides` ($STATE/overrides.env, as the prod
 * profile reads it: every process is replaced), and hands the profile back to its own settings on close.
 */
export async function openClusterSuite(overrides: Record<string, string>): Promise<ClusterSuite> {
  const stack = clusterStack();
  const overridesFile = join(stack.stateDir, 'overrides.env');
  await writeFile(
    overridesFile,
    Object.entries(overrides)
      .map(([k, v]) => `${k}=${v}\n`)
      .join(''),
    { mode: 0o600 },
  );
  await stack.up();
  const db = createDb(stack.config.DATABASE_URL, 5);
  return {
    stack,
    db,
    async close() {
      await db.destroy();
      await stack.fault('heal-all').catch(() => undefined);
      await stack.fault('delay', '0').catch(() => undefined);
      await rm(overridesFile, { force: true });
      await stack.up();
    },
  };
}
