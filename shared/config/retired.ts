// Variables the service read once and no longer does: each setting is now fixed or derived from
// another, said here. A process started with one of them set refuses to start, naming it and what
// decides the value now, rather than silently ignore a setting its operator relies on.
export const retiredVariables = {
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: 'derived: twice DATABASE_STATEMENT_TIMEOUT_MS (db/index.ts dbTimeouts)',
  IDLE_GC_AFTER_MS: "fixed: the gateway's one full collection comes after 10 s without requests (api/idle-gc.ts)",
  FAILED_UPLOAD_RETENTION_DAYS: 'fixed: refused upload records are kept 7 days (worker/upload-sweeper.ts)',
  FETCH_MIN_RATE_WINDOW_MS: 'fixed: FETCH_MIN_BYTES_PER_SECOND is averaged over 10 s (shared/fetch-remote.ts)',
  RECONCILE_LEASE_MS: "fixed: a reconciler replica's claim lasts 60 s (db/repos/job-leases.ts RECONCILE_CLAIM_MS)",
  CONTROL_BUILD_CHECK_MS: 'derived: CONTROL_LEASE_TTL_MS (worker/control-fleet.ts)',
  ROUTE_SLOT_LEASE_MS: 'fixed: an unrenewed route slot comes back after 10 min (activities/jobs/slots.ts)',
  PROVIDER_BREAKER_WINDOW_MS: 'fixed: a circuit counts the attempts of the last 5 min (db/provider-circuits.ts)',
  PROVIDER_BREAKER_TRIAL_MS: 'fixed: a half-open trial holds the route at most 15 min (db/provider-circuits.ts)',
  PROVIDER_OUTPUT_TIMEOUT_MS: 'fixed: a provider output is fetched within 15 min (activities/providers/outputs.ts)',
  UNSHARE_PATH: 'the media sandbox runs unshare from PATH (util-linux)',
  SETPRIV_PATH: 'the media sandbox runs setpriv from PATH (util-linux)',
  PRLIMIT_PATH: 'the media tools run prlimit from PATH (util-linux)',
  MEDIA_SANDBOX_UID: 'fixed: the media tools run as nobody (65534)',
  MEDIA_SANDBOX_GID: 'fixed: the media tools run as group nogroup (65534)',
  MEDIA_SANDBOX_TMPDIR: 'derived: mediagen-media in the OS temp directory (set TMPDIR to move it)',
} as const satisfies Record<string, string>;

/** The retired variables set (non-empty) in `env`, each with what decides its value now. */
export function retiredVariablesSet(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(retiredVariables)
    .filter(([name]) => (env[name] ?? '') !== '')
    .map(([name, now]) => `${name}: no longer read (${now}); remove it`);
}
