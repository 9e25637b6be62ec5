// Load and checks of the cluster chaos suites (test/cluster/chaos.test.ts, test/e2e/cluster-smoke.test.ts):
// image jobs and two-step image pipelines on the fake fal queue (each prompt carries a marker, so
// every provider submit is counted per job), a fault while they are in flight, then the promises:
// every job and pipeline terminal and completed, the ledger of each job netting to its price (SQL),
// the workspace paying exactly that sum, one provider submit per job, and the time from the fault to
// the next completed job.
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Database } from '../../db/index.js';
import { createTenant, waitFor, type Tenant } from './stack.js';
import { api, creditsOf } from './services.js';
import { submitsWith } from './failover-stack.js';
import type { FakeFal } from './fake-providers/fal.js';
import { randomToken } from '../../shared/ids.js';

export interface Load {
  tag: string;
  tenant: Tenant;
  startCredits: number;
  jobs: string[];
  pipelines: string[];
}

const markerRe = /\[c:[a-z0-9]+:[a-z0-9-]+\]/;

/** A create answered, retried with the same Idempotency-Key through the other gateway while the cluster is faulted. */
async function create(gateways: string[], key: string, path: string, body: unknown, idem: string, first: number): Promise<string> {
  let last = '';
  for (let attempt = 0; attempt < 60; attempt++) {
    try {
      const r = await api(gateways[(first + attempt) % gateways.length]!, key).post(path, body, { 'idempotency-key': idem });
      if (r.status === 200) return r.body.data.id as string;
      last = `${r.status} ${r.text}`;
      if (r.status < 500 && r.status !== 429) break;
    } catch (err) {
      last = String(err);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`${path} was not accepted: ${last}`);
}

/** Submits `jobs` image jobs and `pipelines` two-step image pipelines over both gateways, a few at a time. */
export async function submitLoad(gateways: string[], db: Database, opts: { jobs: number; pipelines: number }): Promise<Load> {
  const tag = randomToken(6)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, 'x');
  const startCredits = 1_000_000;
  const tenant = await createTenant(db, startCredits);
  const image = (marker: string) => ({ prompt: `a lighthouse ${marker}`, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
  const load: Load = { tag, tenant, startCredits, jobs: [], pipelines: [] };
  const work: (() => Promise<void>)[] = [];
  for (let i = 0; i < opts.pipelines; i++) {
    work.push(async () => {
      const steps = ['a', 'b'].map((s) => ({ id: s, kind: 'image', body: image(`[c:${tag}:p${i}-${s}]`) }));
      load.pipelines.push(await create(gateways, tenant.apiKey, '/v1/pipelines', { project_id: tenant.projectId, steps }, `${tag}-p${i}`, i));
    });
  }
  for (let i = 0; i < opts.jobs; i++) {
    work.push(async () => {
      const body = { project_id: tenant.projectId, ...image(`[c:${tag}:j${i}]`) };
      load.jobs.push(await create(gateways, tenant.apiKey, '/v1/images/generate', body, `${tag}-j${i}`, i));
    });
  }
  const lanes = Array.from({ length: 8 }, async () => {
    for (let next = work.shift(); next; next = work.shift()) await next();
  });
  await Promise.all(lanes);
  return load;
}

/** Waits until at least `n` of the load's requests reached the fake fal (jobs in flight at the provider). */
export async function inFlight(fal: FakeFal, load: Load, n: number, timeoutMs = 300_000): Promise<void> {
  await waitFor(
    `${n} of the load's jobs submitted to fal`,
    () => [...fal.states.values()].filter((s) => JSON.stringify(s.input).includes(`[c:${load.tag}:`)).length >= n || undefined,
    timeoutMs,
    200,
  );
}

export interface Settled {
  jobs: number;
  pipelines: number;
  /** From the fault to the first job completed after it. */
  recoveryMs: number;
}

/**
 * Waits for every job (the pipelines' steps included) and pipeline of the load to end, then checks
 * nothing was lost and the credits are exact; answers the recovery time, which it prints.
 */
export async function settle(db: Database, fal: FakeFal, load: Load, faultAt: Date, label: string, timeoutMs = 1_200_000): Promise<Settled> {
  const ws = load.tenant.workspaceId;
  await waitFor(
    `${label}: every job and pipeline of the load to end`,
    async () => {
      const open = await sql<{ n: number }>`
        select (select count(*) from jobs where workspace_id = ${ws} and status not in ('completed', 'failed'))
             + (select count(*) from pipelines where workspace_id = ${ws} and status not in ('completed', 'failed')) as n`.execute(db);
      const pipelines = await db.selectFrom('pipelines').select('id').where('workspace_id', '=', ws).execute();
      return Number(open.rows[0]!.n) === 0 && pipelines.length === load.pipelines.length ? true : undefined;
    },
    timeoutMs,
    1000,
  );
  const pipelines = await db.selectFrom('pipelines').select(['id', 'status']).where('workspace_id', '=', ws).execute();
  for (const p of pipelines) assert.equal(p.status, 'completed', `${label}: pipeline ${p.id} completed`);
  // Each job's ledger, summed in SQL: what it was charged net of refunds.
  const rows = await sql<{ id: string; status: string; price: number; params: string; net: string; finished_at: Date | null }>`
    select j.id, j.status, j.price, j.params::text as params, j.finished_at,
           coalesce((select -sum(l.delta) from credit_ledger l where l.job_id = j.id), 0) as net
      from jobs j where j.workspace_id = ${ws}`.execute(db);
  assert.equal(rows.rows.length, load.jobs.length + 2 * load.pipelines.length, `${label}: every job and pipeline step has its row`);
  let total = 0;
  for (const j of rows.rows) {
    const marker = markerRe.exec(j.params)?.[0] ?? '?';
    assert.equal(j.status, 'completed', `${label}: job ${j.id} ${marker} completed`);
    assert.equal(Number(j.net), j.price, `${label}: job ${j.id} ${marker} charged its price exactly once (ledger nets to the price)`);
    assert.equal(submitsWith(fal, marker), 1, `${label}: job ${j.id} ${marker} submitted to the provider exactly once`);
    total += j.price;
  }
  assert.equal(await creditsOf(db, load.tenant), load.startCredits - total, `${label}: the workspace paid exactly the sum of the prices`);
  const after = rows.rows
    .map((r) => r.finished_at?.getTime() ?? 0)
    .filter((t) => t > faultAt.getTime())
    .sort((a, b) => a - b);
  assert.ok(after.length > 0, `${label}: a job completed after the fault`);
  const recoveryMs = after[0]! - faultAt.getTime();
  console.log(
    `[cluster] ${label}: ${rows.rows.length} jobs and ${pipelines.length} pipelines completed, credits exact; recovery ${(recoveryMs / 1000).toFixed(1)} s (fault → next completed job)`,
  );
  return { jobs: rows.rows.length, pipelines: pipelines.length, recoveryMs };
}

/** The suite's settings for the profile's processes: fal as the provider (the test's fake), no rate limit in the way. */
export function chaosOverrides(falEnv: Record<string, string>): Record<string, string> {
  return {
    ...falEnv,
    NODE_ENV: 'test',
    RATE_LIMIT_GENERATE_PER_MIN: '100000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
  };
}
