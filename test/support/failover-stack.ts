// The stack the failover and submit-once suites share: a fresh test database, the local fal queue as
// a live route (its outputs on a loopback HTTPS "CDN"), optionally a second provider's fake for the
// model's other route (xAI for grok-video, Google for the Veo models, BytePlus for Seedream and
// Seedance, Alibaba for replace-actor) with its files on that CDN, the gateway in-process and the
// worker roles the suite asks for. Also the built worker as its own process, for suites that kill
// one, counts of a fake's requests per job (by a prompt marker), and a job's row, its end and its ledger.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, testConfig, waitFor, type TestDatabase } from './stack.js';
import { startGateway, startWorkers, type InProcessGateway, type Workers } from './services.js';
import type { FakeFal } from './fake-providers/fal.js';
import { startLiveFal, type LiveFal } from './fake-providers/live-fal.js';
import { startFakeXai } from './fake-providers/xai.js';
import { startFakeGoogle } from './fake-providers/google.js';
import { startFakeByteplus } from './fake-providers/byteplus.js';
import { startFakeAlibaba } from './fake-providers/alibaba.js';
import type { FakeServer } from './fake-providers/server.js';
import type { Config } from '../../shared/config.js';

const workerMain = fileURLToPath(new URL('../../worker/main.js', import.meta.url));

/** The second routes a suite can bring: the fake, and the variables that make it live. */
const secondaries = {
  xai: async (cdnOrigin: string) => {
    const fake = await startFakeXai();
    fake.filesBaseUrl = cdnOrigin;
    return { fake, env: { XAI_API_KEY: fake.key, XAI_BASE_URL: fake.url } };
  },
  google: async (cdnOrigin: string) => {
    const fake = await startFakeGoogle();
    fake.filesBaseUrl = cdnOrigin;
    return { fake, env: { GEMINI_API_KEY: fake.key, GEMINI_BASE_URL: fake.url } };
  },
  byteplus: async (cdnOrigin: string) => {
    const fake = await startFakeByteplus();
    fake.filesBaseUrl = cdnOrigin;
    return { fake, env: { ARK_API_KEY: fake.key, ARK_BASE_URL: fake.url } };
  },
  alibaba: async (cdnOrigin: string) => {
    const fake = await startFakeAlibaba();
    fake.filesBaseUrl = cdnOrigin;
    return { fake, env: { DASHSCOPE_API_KEY: fake.key, DASHSCOPE_BASE_URL: fake.url } };
  },
};

type SecondaryName = keyof typeof secondaries;
type Secondaries = { [K in SecondaryName]: Awaited<ReturnType<(typeof secondaries)[K]>>['fake'] };
type SecondaryFake<S> = S extends SecondaryName ? Secondaries[S] : undefined;

export interface FailoverStack<S extends SecondaryName | undefined = undefined> {
  tdb: TestDatabase;
  live: LiveFal;
  fal: FakeFal;
  /** The second route's fake, when the suite asked for one. */
  secondary: SecondaryFake<S>;
  /** The provider variables (fakes, loopback CDN, failover budget), for worker processes too. */
  env: Record<string, string>;
  config: Config;
  gw: InProcessGateway;
  /** The in-process worker roles the suite asked for; none when `roles` was empty. */
  workers: Workers | undefined;
  close(): Promise<void>;
}

export interface FailoverStackOptions<S extends SecondaryName | undefined> {
  secondary?: S;
  /** In-process worker roles, e.g. 'workflows,io,fetch,provider:fal'; '' starts none. */
  roles: string;
  /** Further configuration overrides. */
  env?: Record<string, string>;
}

/**
 * Starts the stack. A provider unreachable for 1.5 s (PROVIDER_FAILOVER_BUDGET_MS: a step's second
 * failed attempt) has its route given up, so a failover takes seconds; the rate limits are out of the way and the reconciler's periodic pass
 * stays out of the tests' timing.
 */
export async function startFailoverStack<S extends SecondaryName | undefined = undefined>(opts: FailoverStackOptions<S>): Promise<FailoverStack<S>> {
  const tdb = await createTestDatabase();
  const live = await startLiveFal();
  const second = opts.secondary ? await secondaries[opts.secondary](live.cdn.origin) : undefined;
  const env = { ...live.env, ...second?.env, PROVIDER_FAILOVER_BUDGET_MS: '1500', RECONCILE_INTERVAL_MS: '3600000', ...opts.env };
  const config = testConfig(tdb.url, { ...env, RATE_LIMIT_GENERATE_PER_MIN: '1000', RATE_LIMIT_POLL_PER_MIN: '100000' });
  const gw = await startGateway(config, tdb.db);
  const workers = opts.roles ? await startWorkers(config, tdb.db, opts.roles) : undefined;
  return {
    tdb,
    live,
    fal: live.fal,
    secondary: second?.fake as SecondaryFake<S>,
    env,
    config,
    gw,
    workers,
    async close() {
      await workers?.stop();
      await gw.close();
      await Promise.all([live.close(), second?.fake.close()]);
      await tdb.drop();
    },
  };
}

export interface WorkerProcess {
  child: ChildProcess;
  /** The exit code (null: ended by a signal). */
  exited: Promise<unknown>;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
}

/** The built worker as its own process with these roles, on the stack's database and task queues. */
export async function spawnWorkerProcess(stack: Pick<FailoverStack<SecondaryName | undefined>, 'env' | 'config'>, roles: string): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [workerMain, '--roles', roles], {
    env: {
      ...process.env,
      ...stack.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATABASE_URL: stack.config.DATABASE_URL,
      TASK_QUEUE_PREFIX: stack.config.TASK_QUEUE_PREFIX,
      WORKER_METRICS_PORT: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  await Promise.race([
    waitFor(`worker process ${child.pid} to start`, () => out.includes('"msg":"worker started"'), 60_000, 50),
    exited.then(() => {
      throw new Error(`worker process exited before starting:\n${out}`);
    }),
  ]);
  return { child, exited, output: () => out };
}

/** Submits at a fake whose body carries this prompt marker. */
export function submitsWith(fake: FakeServer, marker: string): number {
  return fake.requestsOf('submit').filter((r) => JSON.stringify(r.json).includes(marker)).length;
}

/** Requests of `op` at the fal queue that belong to the job with this prompt marker. */
export function falRequestsWith(fal: FakeFal, op: 'submit' | 'status' | 'result' | 'cancel', marker: string): number {
  if (op === 'submit') return submitsWith(fal, marker);
  const ids = new Set([...fal.states.values()].filter((s) => JSON.stringify(s.input).includes(marker)).map((s) => s.id));
  return fal.requestsOf(op).filter((r) => ids.has(r.path.split('/')[4]!)).length;
}
