// Worker process entry: `npm run worker -- --roles workflows,io,provider:local` (or WORKER_ROLES);
// no roles runs all of them. The worker service (worker/service.ts) does the work; this file only
// installs the SDK runtime and handles signals. SIGTERM/SIGINT: stop polling, let in-flight
// activities finish within WORKER_SHUTDOWN_GRACE_MS (a provider fleet: at least its providers'
// longest paid call, activities/providers/call-timeouts.ts), exit 0.
import { Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import { ConfigError, loadConfig } from '../shared/config.js';
import { missingRoleSecrets } from '../shared/routing.js';
import { parseRoles, roleName } from './roles.js';
import { createWorkerService } from './service.js';
import { startTracing, tracing } from '../shared/tracing.js';

function rolesFromArgs(argv: string[]): string | undefined {
  const i = argv.indexOf('--roles');
  if (i >= 0) return argv[i + 1];
  return argv.find((a) => a.startsWith('--roles='))?.slice('--roles='.length);
}

/** The SDK core serves its own Prometheus endpoint on a free loopback port; ours relays it next to our series. */
async function installSdkMetrics(): Promise<string> {
  const { createServer } = await import('node:net');
  const sdkPort = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  Runtime.install({
    logger: undefined,
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) },
      metrics: { prometheus: { bindAddress: `127.0.0.1:${sdkPort}` } },
    },
  });
  return `http://127.0.0.1:${sdkPort}/metrics`;
}

async function main() {
  const config = loadConfig();
  const roles = parseRoles(rolesFromArgs(process.argv.slice(2)) ?? config.WORKER_ROLES);
  const missing = missingRoleSecrets(config, roles.map(roleName));
  if (missing.length) throw new ConfigError(`invalid configuration:\n${missing.map((m) => `  ${m}`).join('\n')}`);
  // Before the service is built: its logger, db pool and workers are traced only when tracing runs by then.
  await startTracing(config, 'mediagen-worker');
  const sdkMetricsUrl = config.WORKER_METRICS_PORT !== null ? await installSdkMetrics() : undefined;
  const service = createWorkerService(config, roles, sdkMetricsUrl ? { sdkMetricsUrl } : {});

  await service.start();
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    service.logger.info({ signal }, 'shutting down: no new tasks, finishing in-flight ones');
    void service.stop();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  await service.done;
  await tracing()?.shutdown();
  service.logger.info('worker stopped');
}

main().then(
  () => process.exit(0),
  (err) => {
    // Config errors name variables, never values.
    console.error(`worker failed: ${(err as Error).message}`);
    process.exit(1);
  },
);
