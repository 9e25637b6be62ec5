// The gateway process: the gateway service (api/gateway.ts) from validated config, started on
// HOST:PORT, and a graceful stop on SIGTERM/SIGINT. Everything else lives in the service object.
import { ConfigError, loadConfig } from '../shared/config.js';
import { localRenderedModels, missingRoleSecrets } from '../shared/routing.js';
import { createGateway } from './gateway.js';
import { startTracing, tracing } from '../shared/tracing.js';
import { installLastResort } from './last-resort.js';

// Signals are caught from the first moment, so a SIGTERM during start-up still ends in an orderly
// exit (once start-up has finished) rather than the default kill.
let onSignal: ((signal: string) => void) | null = null;
let pendingSignal: string | null = null;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => (onSignal ? onSignal(signal) : (pendingSignal ??= signal)));
}

/** How long requests in flight may finish after a fatal error before the process exits. */
const FATAL_GRACE_MS = 5_000;

async function main(): Promise<void> {
  const config = loadConfig();
  // A production gateway encrypts webhook endpoint secrets with WEBHOOK_SECRETS_KEY: without it the
  // process refuses to start (as the webhooks fleet does) rather than answer 503 on every create.
  const missing = missingRoleSecrets(config, ['gateway']);
  if (missing.length) throw new ConfigError(`invalid configuration:\n${missing.map((m) => `  ${m}`).join('\n')}`);
  // Before anything else is built: the logger, the db pool and the Temporal client are traced only
  // when tracing runs by then.
  await startTracing(config, 'mediagen-api');
  const gateway = createGateway(config);
  const { logger } = gateway;
  const local = localRenderedModels(config);
  if (config.NODE_ENV === 'production' && local.length > 0) {
    // Allowed on purpose (ALLOW_PLACEHOLDER_PROVIDERS, else the config refused it), but clients are
    // paying for placeholders: say so once, loudly; job records carry provider: "local" too.
    logger.warn({ models: local }, `serving ${local.length} model(s) from the local renderer (no provider key set): ${local.join(', ')}`);
  }
  await gateway.start();

  let stopping = false;
  const shutdown = async (signal: string, code = 0, graceMs?: number) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    try {
      await gateway.stop(graceMs === undefined ? {} : { graceMs });
      await tracing()?.shutdown();
      logger.info('stopped');
      process.exit(code);
    } catch (err) {
      logger.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  onSignal = (signal) => void shutdown(signal);
  // An error no request owns leaves the process in an unknown state: requests in flight get a
  // short grace, then the process exits non-zero and its supervisor starts a fresh one.
  installLastResort({
    logger,
    onFatal: () => {
      setTimeout(() => process.exit(1), FATAL_GRACE_MS + 5_000).unref();
      void shutdown('fatal error', 1, FATAL_GRACE_MS);
    },
  });
  if (pendingSignal) onSignal(pendingSignal);
}

main().catch((err: unknown) => {
  // Config errors name the variable, never its value; anything else is logged without secrets.
  process.stderr.write(`gateway failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
