// The cluster profile's fault tool, scripts/cluster/faults.sh, for the suites on that profile
// (./profile-stack.ts opens them): run on the profile's state directory, with the leader Patroni names.
import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ProfileStack } from './profile-stack.js';

const faultsSh = fileURLToPath(new URL('../../../scripts/cluster/faults.sh', import.meta.url));

export interface ClusterFaults {
  /** scripts/cluster/faults.sh with these arguments; answers its output (it fails the test when the tool fails). */
  fault(...args: string[]): Promise<string>;
  /** The node Patroni names leader (pg-1 or pg-2). */
  leader(): Promise<string>;
  /** Every partition healed and no added delay: the network as the profile starts it. */
  healAll(): Promise<void>;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(cmd, args, { env, timeout: timeoutMs }, (err, stdout, stderr) =>
      err ? reject(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stderr}`)) : resolve(stdout + stderr),
    ),
  );
}

export function clusterFaults(stack: Pick<ProfileStack, 'stateDir' | 'vars'>): ClusterFaults {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, MEDIA_GEN_HOME: dirname(stack.stateDir), STACK_STATE_DIR: stack.stateDir };
  if (process.env.MEDIA_GEN_CACHE) env.MEDIA_GEN_CACHE = process.env.MEDIA_GEN_CACHE;
  const fault = (...args: string[]) => run('bash', [faultsSh, ...args], env);
  return {
    fault,
    leader: () => leaderOf(stack.vars),
    async healAll() {
      await fault('heal-all').catch(() => undefined);
      await fault('delay', '0').catch(() => undefined);
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
