// One database role per fleet, for deployments that run the fleets apart: each holds only the
// tables its fleet's code reads and writes (never more than the app role of db/roles.ts may, so
// the ledger stays insert-only and `workspaces` updatable only in its balance). What each fleet
// touches, from its code:
//
// - every fleet that moves a job runs the job service (jobs/): the job row, its timeline and the
//   rows the jobs table's triggers write as the mover (a webhook event, a timeline entry), the
//   charge or refund (ledger, balance, budgets), route slots and provider circuits, the audit log.
// - gateway (api/): that, plus authentication (keys, members), rate limits, idempotency keys, the
//   catalog, uploads and their per-key slots, pipelines, deliveries (listed and redelivered). It
//   reads route probes and circuits; it holds no control lease and touches no deploy record.
// - workflows (and io: the same activities, local or on the io queue): the job service, the
//   catalog and upload rows a job reads, pipelines.
// - fetch: the job service, uploads from a URL and the fleet-wide fetch slots.
// - provider:<name>: the job service, the upload a background job reads, its route probes.
// - webhooks: the deliveries and their attempts, the signing secrets, the per-destination breaker;
//   it moves no job and never sees the ledger or the API keys.
// - reconciler (and its control loops: upload sweep, webhook dispatch, pipeline repair, gauges):
//   the job service, the usage rollups' fold, expiry sweeps (uploads, idempotency keys, rate-limit windows, deliveries,
//   idle breakers), the queue gauges (which read key ids, never secrets).
// - every worker fleet: the control leases and the build records of the promoter.
//
// A process that runs several roles connects as a login role that is a member of each fleet role
// it runs (`grant mediagen_workflows, mediagen_fetch to …`): PostgreSQL gives it the union.
// docs/operations/managed-services.md lists these grants; db-fleet-roles.test.ts holds them.
import { sql } from 'kysely';
import type { Database } from './index.js';
import { appAppendOnlyTables, appReadOnlyTables } from './roles.js';

export const fleets = ['gateway', 'workflows', 'fetch', 'provider', 'webhooks', 'reconciler'] as const;
export type Fleet = (typeof fleets)[number];

/** The fleet role that serves a worker role (worker/roles.ts): io runs the workflows fleet's activities. */
export function fleetOfWorkerRole(kind: 'workflows' | 'io' | 'fetch' | 'webhooks' | 'reconciler' | 'provider'): Fleet {
  return kind === 'io' ? 'workflows' : kind;
}

/** Privileges on one table: `select`, `insert`, `update`, `delete` (the whole table) or `update(a, b)`, `select(id)` (those columns). */
type TableGrant = string;

const READ = 'select';
const APPEND = 'select, insert';
const ALL = 'select, insert, update, delete';
const BALANCE = 'select, update(credits, updated_at)';

/** What moving a job writes, as the mover: the job service and the jobs table's triggers. */
const jobService: Record<string, TableGrant> = {
  jobs: 'select, insert, update',
  job_timeline: APPEND,
  // A create's label index rows (0115_labels), written with the job.
  job_labels: APPEND,
  // The status trigger records the webhook event of a move (0007_webhooks); its `on conflict (id)`
  // reads the id, and nothing else of a delivery.
  webhook_deliveries: 'select(id), insert',
  credit_ledger: APPEND,
  workspaces: BALANCE,
  projects: READ,
  budgets: READ,
  // The balance's trigger reads the low-balance thresholds on every charge (0100_balance_alerts).
  balance_alerts: READ,
  // The triggers and the pipeline and budget events fan out to the subscribed endpoints (0110_webhook_endpoints).
  webhook_endpoints: READ,
  budget_spend: 'select, insert, update',
  budget_charges: APPEND,
  audit_events: APPEND,
  route_slots: ALL,
  // A route's row is locked (FOR UPDATE, which needs UPDATE) while its slots are counted.
  route_slot_routes: 'select, insert, update',
  route_slot_waiters: ALL,
  provider_circuits: 'select, insert, update',
  provider_route_outcomes: APPEND,
  // The workspace event log (0120_workspace_events): a move's event is inserted and numbered at
  // commit (the number an update of the workspace's counter row and of the event row).
  workspace_events: 'select, insert, update',
  workspace_event_counters: 'select, insert, update',
  // Reuse of identical requests (0145_request_reuse): a job's first step takes or reads its key's source.
  reuse_sources: 'select, insert, update',
};

/** The promoter's build records and the leases of the loops run once per deployment. A row locked
 * FOR UPDATE needs UPDATE on the table, so the sweeps that lock before deleting hold it too. */
const workerCommon: Record<string, TableGrant> = {
  control_leases: 'select, insert, update',
  // A build seen current again refreshes its row (insert … on conflict do update).
  deployment_builds: 'select, insert, update(last_seen_current_at)',
};

export const fleetGrants: Readonly<Record<Fleet, Readonly<Record<string, TableGrant>>>> = {
  gateway: {
    ...jobService,
    api_keys: 'select, update(last_used_at)',
    // PUT /v1/balance/alerts: the owner's thresholds.
    balance_alerts: 'select, insert, update',
    // /v1/webhook-endpoints: the customer's endpoints and their (encrypted) secrets.
    webhook_endpoints: ALL,
    workspace_members: READ,
    webhook_secrets: READ,
    rate_limits: ALL,
    idempotency_keys: ALL,
    actors: READ,
    voices: READ,
    file_uploads: ALL,
    upload_slots: ALL,
    pipelines: 'select, insert, update',
    pipeline_steps: 'select, insert, update',
    pipeline_labels: APPEND,
    batches: 'select, insert, update',
    batch_items: 'select, insert, update',
    // POST /v1/bulk-actions writes the action and its jobs; the GETs read their counts (0135_bulk_actions).
    bulk_actions: 'select, insert',
    bulk_action_jobs: 'select, insert',
    webhook_deliveries: 'select, insert, update',
    webhook_attempts: READ,
    webhook_circuits: READ,
    route_probes: READ,
    // The console's browser sessions (0130_console_sessions): signed in, read per request, signed out.
    console_sessions: ALL,
    // GET /v1/usage: the daily rollups and the deltas not yet folded (0076_usage_daily).
    usage_daily: READ,
    usage_deltas: READ,
  },
  workflows: {
    ...jobService,
    ...workerCommon,
    actors: READ,
    voices: READ,
    // A pipeline step's checkpoint registers its outputs as uploads of the workspace (activities/pipeline-checkpoint.ts).
    file_uploads: APPEND,
    pipelines: 'select, insert, update',
    pipeline_steps: 'select, insert, update',
    // A batch's pipeline item makes its pipeline with the item's labels (0150_batch_pipelines).
    pipeline_labels: APPEND,
    batches: 'select, insert, update',
    batch_items: 'select, insert, update',
    // A bulk action's steps (io activities) mark its jobs and end it.
    bulk_actions: 'select, update',
    bulk_action_jobs: 'select, update',
  },
  fetch: {
    ...jobService,
    ...workerCommon,
    actors: READ,
    voices: READ,
    file_uploads: 'select, insert, update',
    fetch_slots: ALL,
  },
  provider: {
    ...jobService,
    ...workerCommon,
    file_uploads: READ,
    route_probes: 'select, insert, update',
  },
  webhooks: {
    ...workerCommon,
    jobs: READ,
    webhook_deliveries: 'select, update',
    webhook_attempts: 'select, insert, update',
    webhook_secrets: READ,
    // An endpoint's delivery is signed with its secrets (0110_webhook_endpoints).
    webhook_endpoints: READ,
    webhook_circuits: ALL,
  },
  reconciler: {
    ...jobService,
    ...workerCommon,
    api_keys: READ,
    actors: READ,
    voices: READ,
    file_uploads: ALL,
    upload_slots: ALL,
    fetch_slots: ALL,
    idempotency_keys: 'select, delete',
    // The idle-row sweep skips rows a lease call holds (FOR UPDATE SKIP LOCKED needs UPDATE).
    rate_limits: 'select, update, delete',
    pipelines: 'select, insert, update',
    pipeline_steps: 'select, insert, update',
    batches: 'select, insert, update',
    batch_items: 'select, insert, update',
    // Bulk actions whose workflow never started are started again (worker/bulk-action-reconciler.ts).
    bulk_actions: READ,
    webhook_deliveries: 'select, insert, update, delete',
    webhook_attempts: 'select, delete',
    webhook_circuits: 'select, delete',
    route_probes: READ,
    // The event log's retention sweep (db/repos/workspace-events.ts sweepWorkspaceEvents).
    workspace_events: ALL,
    // Expired console sessions are swept (db/repos/console-sessions.ts).
    console_sessions: 'select, delete',
  },
};

type Privilege = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE';

interface ParsedGrant {
  /** Privileges on the whole table. */
  privileges: Privilege[];
  /** Column-level privileges (`update(a, b)`, `select(id)`): the columns of each. */
  columns: Partial<Record<Privilege, string[]>>;
}

export function parseGrant(spec: TableGrant): ParsedGrant {
  const out: ParsedGrant = { privileges: [], columns: {} };
  for (const m of spec.matchAll(/(select|insert|delete|update)(?:\(([^)]*)\))?/g)) {
    const p = m[1]!.toUpperCase() as Privilege;
    if (m[2] === undefined) out.privileges.push(p);
    else
      out.columns[p] = m[2]
        .split(',')
        .map((c) => c.trim())
        .sort();
  }
  out.privileges.sort();
  return out;
}

/** Where a fleet's grant would exceed the app role's (db/roles.ts): none may. */
export function exceedsAppRole(table: string, spec: TableGrant): string | null {
  const g = parseGrant(spec);
  const readOnly = appReadOnlyTables[table];
  const any = (p: Privilege) => g.privileges.includes(p) || g.columns[p] !== undefined;
  if (appAppendOnlyTables.includes(table) && (any('UPDATE') || any('DELETE'))) return `${table} is append-only`;
  if (readOnly !== undefined) {
    if (any('INSERT') || any('DELETE')) return `${table} is read-only to the app`;
    if (g.privileges.includes('UPDATE') || (g.columns.UPDATE ?? []).some((c) => !readOnly.includes(c)))
      return `${table}: the app may update only ${readOnly.join(', ') || 'no column'}`;
  }
  return null;
}

const ROLE_PREFIX = /^[a-z_][a-z0-9_]{0,40}$/;

export function fleetRoleName(prefix: string, fleet: Fleet): string {
  return `${prefix}_${fleet}`;
}

/**
 * Grants each fleet role (`<prefix>_<fleet>`, made beforehand by whoever creates roles, like the
 * app role) exactly its fleet's tables, revoking anything else it held on the schema. Idempotent;
 * run by the owner after every migration. A table the schema lacks is an error (a stale list).
 */
export async function grantFleetRoles(db: Database, prefix: string): Promise<{ roles: string[] }> {
  if (!ROLE_PREFIX.test(prefix)) throw new Error('the fleet role prefix must be a plain lower-case identifier');
  const tables = (
    await sql<{ tablename: string }>`select tablename from pg_tables where schemaname = 'public' and tablename not like 'kysely_%'`.execute(db)
  ).rows.map((t) => t.tablename);
  const roles = fleets.map((f) => fleetRoleName(prefix, f));
  const existing = new Set((await sql<{ rolname: string }>`select rolname from pg_roles where rolname = any(${roles})`.execute(db)).rows.map((r) => r.rolname));
  const missing = roles.filter((r) => !existing.has(r));
  if (missing.length > 0) throw new Error(`create these roles first (create role NAME nologin, or login with a password): ${missing.join(', ')}`);
  for (const fleet of fleets) {
    for (const [table, spec] of Object.entries(fleetGrants[fleet])) {
      if (!tables.includes(table)) throw new Error(`fleet ${fleet}: no table ${table} in the schema`);
      const why = exceedsAppRole(table, spec);
      if (why) throw new Error(`fleet ${fleet}: ${why}`);
    }
  }
  await db.transaction().execute(async (tx) => {
    await sql`revoke create on schema public from public`.execute(tx);
    for (const fleet of fleets) {
      const r = sql.id(fleetRoleName(prefix, fleet));
      await sql`grant usage on schema public to ${r}`.execute(tx);
      for (const table of tables) await sql`revoke all on ${sql.id('public', table)} from ${r}`.execute(tx);
      for (const [table, spec] of Object.entries(fleetGrants[fleet])) {
        const g = parseGrant(spec);
        const t = sql.id('public', table);
        if (g.privileges.length > 0) await sql`grant ${sql.raw(g.privileges.join(', '))} on ${t} to ${r}`.execute(tx);
        for (const [p, cols] of Object.entries(g.columns)) await sql`grant ${sql.raw(p)} (${sql.join(cols.map((c) => sql.id(c)))}) on ${t} to ${r}`.execute(tx);
      }
      await sql`grant usage, select on all sequences in schema public to ${r}`.execute(tx);
      // The audit log's retention sweep (0030_audit_retention) runs in the reconciler's loops.
      // So does the fold of the usage deltas into the daily rollups (0076_usage_daily).
      for (const fn of [sql`expire_audit_events(integer, integer)`, sql`fold_usage_deltas()`]) {
        if (fleet === 'reconciler') await sql`grant execute on function ${fn} to ${r}`.execute(tx);
        else await sql`revoke execute on function ${fn} from ${r}`.execute(tx);
      }
    }
  });
  return { roles };
}
