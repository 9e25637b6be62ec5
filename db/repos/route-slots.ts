// Route slot pools (0024_route_slots, 0070_route_slot_grants): SQL only. Who gets a free slot is
// decided by shared/route-slots.ts (decideSlot for a job asking, grantOrder for the slots a release
// hands out), under the route's row lock, so takes and releases of one route never race: however
// many workers take at once, the route never has more holders (grants included) than slots.
import { sql } from 'kysely';
import type { Database, Queryable, Tx } from '../index.js';
import type { JobPriority } from '../../shared/job-model.js';
import {
  decideSlot,
  grantOrder,
  SLOT_GRANT_LEASE_MS,
  slotPriorityKeys,
  type RoutePool,
  type SlotDecision,
  type WorkspaceDemand,
} from '../../shared/route-slots.js';

/** The job asking for a slot. */
export interface SlotClaimant {
  jobId: string;
  workspaceId: string;
  /** jobs.fairness_weight. */
  weight: number;
  priority: JobPriority;
}

export interface SlotTiming {
  /** How long a slot is held without a renewal (a check of the job renews it). */
  leaseMs: number;
  /** A waiter not seen again within this long (its job stopped asking) no longer counts. */
  waiterFreshMs: number;
  /** The submit step's attempt asking (stored with the slot: the attempts before it only waited). */
  attempt?: number;
}

/**
 * A refusal says how many of the job's own workspace's waiters come before it (its retry may wait
 * longer the further back it is). `grantees`: other waiting jobs this take handed a free slot to
 * (their workflows are to be woken).
 */
type TakeResult = ((SlotDecision & { granted: true; takenAttempt: number }) | (SlotDecision & { granted: false; position: number })) & {
  grantees?: string[];
};

const secs = (ms: number) => sql<Date>`now() + make_interval(secs => ${ms / 1000})`;
const ago = (ms: number) => sql<Date>`now() - make_interval(secs => ${ms / 1000})`;

/**
 * Takes a slot of `pool` for the job, or registers it as waiting. A job that holds the route's slot
 * already keeps it (its lease renewed); a slot it holds on another route (one it left) is given back.
 * Expired slots and stale waiters of the route are cleared first. One transaction, the route's row
 * locked (SELECT … FOR UPDATE) from the first read to the commit; a route plainly full is refused
 * before, in one statement (refuseWhenFull).
 */
export async function takeSlot(db: Database, pool: RoutePool, who: SlotClaimant, timing: SlotTiming & { locked?: boolean }): Promise<TakeResult> {
  // A job that waits for a grant (timing.locked) is registered as a waiter under the lock: a release
  // between the lock-free refusal's read and its new waiter row would grant no one, and the job
  // would sleep on. Once registered, every release sees it, and the lock-free refusal is safe.
  const full = await refuseWhenFull(db, pool, who);
  if (full && (full.known || !timing.locked)) return full.refusal;
  return db.transaction().execute((tx) => takeSlotIn(tx, pool, who, timing));
}

/**
 * The common case of a backlog, without the route's lock: the route is full of live slots and the
 * job holds none, so it is refused (as waiting: its waiter row written) in one statement. A refusal
 * never grants, so no lock is needed. Undefined when the locked path must decide.
 */
async function refuseWhenFull(db: Database, pool: RoutePool, who: SlotClaimant): Promise<{ refusal: TakeResult; known: boolean } | undefined> {
  const priorityKey = slotPriorityKeys[who.priority];
  const { rows } = await sql<{ held: number; holds_one: boolean; position: number; known: boolean }>`
    with known as (
      select exists (select 1 from route_slot_waiters where job_id = ${who.jobId} and route = ${pool.route}) as known
    ), held as (
      select count(*)::int as n from route_slots where route = ${pool.route} and lease_until >= now()
    ), mine as (
      select exists (select 1 from route_slots where job_id = ${who.jobId}) as holds_one
    ), waiter as (
      insert into route_slot_waiters (job_id, route, workspace_id, weight, priority_key)
      select ${who.jobId}, ${pool.route}, ${who.workspaceId}, ${who.weight}, ${priorityKey}
      where (select n from held) >= ${pool.slots} and not (select holds_one from mine)
      on conflict (job_id) do update set
        seen_at = now(), weight = excluded.weight, priority_key = excluded.priority_key, workspace_id = excluded.workspace_id,
        since = case when route_slot_waiters.route = excluded.route then route_slot_waiters.since else now() end,
        route = excluded.route
      returning since
    )
    select (select n from held) as held, (select holds_one from mine) as holds_one, (select known from known) as known,
      (select count(*)::int from route_slot_waiters o, waiter w
        where o.route = ${pool.route} and o.workspace_id = ${who.workspaceId} and o.job_id <> ${who.jobId}
          and (o.priority_key, o.since, o.job_id) < (${priorityKey}, w.since, ${who.jobId})) as position`.execute(db);
  const row = rows[0];
  if (!row || row.holds_one || Number(row.held) < pool.slots) return undefined;
  // known: the job was a waiter of the route before this statement (a release since saw it).
  return { refusal: { granted: false, reason: 'full', position: Number(row.position) }, known: row.known };
}

async function takeSlotIn(tx: Tx, pool: RoutePool, who: SlotClaimant, timing: SlotTiming): Promise<TakeResult> {
  await tx
    .insertInto('route_slot_routes')
    .values({ route: pool.route, slots: pool.slots })
    // Written only when it changed: no row version per take.
    .onConflict((oc) => oc.column('route').doUpdateSet({ slots: pool.slots }).where('route_slot_routes.slots', 'is distinct from', pool.slots))
    .execute();
  await tx.selectFrom('route_slot_routes').select('route').where('route', '=', pool.route).forUpdate().executeTakeFirstOrThrow();
  const mine = await tx.selectFrom('route_slots').select(['route', 'taken_attempt']).where('job_id', '=', who.jobId).executeTakeFirst();
  if (mine?.route === pool.route) {
    // A grant (taken_attempt 0) becomes the job's slot now, taken by this attempt.
    const takenAttempt = mine.taken_attempt === 0 ? (timing.attempt ?? 1) : mine.taken_attempt;
    await tx
      .updateTable('route_slots')
      .set({ lease_until: secs(timing.leaseMs), taken_attempt: takenAttempt })
      .where('job_id', '=', who.jobId)
      .execute();
    await tx.deleteFrom('route_slot_waiters').where('job_id', '=', who.jobId).execute();
    return { granted: true, takenAttempt };
  }
  if (mine) await tx.deleteFrom('route_slots').where('job_id', '=', who.jobId).execute();
  await tx
    .deleteFrom('route_slots')
    .where('route', '=', pool.route)
    .where('lease_until', '<', sql<Date>`now()`)
    .execute();
  await tx.deleteFrom('route_slot_waiters').where('route', '=', pool.route).where('seen_at', '<', ago(timing.waiterFreshMs)).execute();
  const priorityKey = slotPriorityKeys[who.priority];
  const me = await tx
    .insertInto('route_slot_waiters')
    .values({ job_id: who.jobId, route: pool.route, workspace_id: who.workspaceId, weight: who.weight, priority_key: priorityKey })
    .onConflict((oc) =>
      oc.column('job_id').doUpdateSet({
        seen_at: sql<Date>`now()`,
        weight: who.weight,
        priority_key: priorityKey,
        // A job that moved to this route from another starts waiting here now.
        since: sql<Date>`case when route_slot_waiters.route = excluded.route then route_slot_waiters.since else now() end`,
        route: pool.route,
        workspace_id: who.workspaceId,
      }),
    )
    .returning(['since'])
    .executeTakeFirstOrThrow();
  const demand = await demandOf(tx, pool.route);
  const position = await tx
    .selectFrom('route_slot_waiters')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('route', '=', pool.route)
    .where('workspace_id', '=', who.workspaceId)
    .where(sql<boolean>`(priority_key, since, job_id) < (${priorityKey}, ${me.since}, ${who.jobId})`)
    .executeTakeFirstOrThrow();
  const decision = decideSlot(pool.slots, demand, who.workspaceId, Number(position.n));
  // The slots free beyond the asker's go to the waiters before it, without waiting for them to ask.
  if (!decision.granted) return { ...decision, position: Number(position.n), grantees: await grantFree(tx, pool.route, pool.slots) };
  const takenAttempt = timing.attempt ?? 1;
  await tx
    .insertInto('route_slots')
    .values({
      job_id: who.jobId,
      route: pool.route,
      workspace_id: who.workspaceId,
      weight: who.weight,
      lease_until: secs(timing.leaseMs),
      taken_attempt: takenAttempt,
    })
    .execute();
  await tx.deleteFrom('route_slot_waiters').where('job_id', '=', who.jobId).execute();
  return { granted: true, takenAttempt, grantees: await grantFree(tx, pool.route, pool.slots) };
}

/**
 * Hands the route's free slots to its waiters in fair order (grantOrder), each to its workspace's
 * first waiter by priority then age: a slot row with taken_attempt 0 and a lease of
 * SLOT_GRANT_LEASE_MS, which the job's next submit takes. Runs under the route's lock, after the
 * caller cleared expired slots and stale waiters. Answers the jobs granted a slot (to be woken).
 */
async function grantFree(tx: Tx, route: string, slots: number): Promise<string[]> {
  const demand = await demandOf(tx, route);
  const free = slots - demand.reduce((s, d) => s + d.held, 0);
  if (free <= 0 || !demand.some((d) => d.waiting > 0)) return [];
  const order = grantOrder(free, demand);
  const granted: string[] = [];
  for (const workspaceId of order) {
    const { rows } = await sql<{ job_id: string }>`
      with next as (
        select job_id, weight from route_slot_waiters
        where route = ${route} and workspace_id = ${workspaceId}
        order by priority_key, since, job_id limit 1
      ), gone as (
        delete from route_slot_waiters w using next where w.job_id = next.job_id returning w.job_id
      )
      insert into route_slots (job_id, route, workspace_id, weight, lease_until, taken_attempt)
      select next.job_id, ${route}, ${workspaceId}, next.weight, now() + make_interval(secs => ${SLOT_GRANT_LEASE_MS / 1000}), 0
      from next join gone on gone.job_id = next.job_id
      on conflict (job_id) do nothing
      returning job_id`.execute(tx);
    if (rows[0]) granted.push(rows[0].job_id);
  }
  return granted;
}

/** Per workspace on the route: the slots it holds and its waiters (the caller cleared the stale ones). */
async function demandOf(q: Queryable, route: string): Promise<WorkspaceDemand[]> {
  const { rows } = await sql<{
    workspace_id: string;
    held: number;
    waiting: number;
    weight: number;
    best_priority: number;
    oldest: Date | null;
    last_taken: Date | null;
  }>`
    select workspace_id, sum(held)::int as held, sum(waiting)::int as waiting, max(weight) as weight,
           min(priority_key) as best_priority, min(since) as oldest, max(taken_at) as last_taken
    from (
      select workspace_id, 1 as held, 0 as waiting, weight, 9 as priority_key, null::timestamptz as since, taken_at from route_slots where route = ${route}
      union all
      select workspace_id, 0, 1, weight, priority_key, since, null from route_slot_waiters where route = ${route}
    ) d
    group by workspace_id`.execute(q);
  return rows.map((r) => ({
    workspaceId: r.workspace_id,
    held: Number(r.held),
    waiting: Number(r.waiting),
    weight: Number(r.weight) > 0 ? Number(r.weight) : 1,
    bestPriority: Number(r.best_priority),
    oldestSince: r.oldest ? new Date(r.oldest).getTime() : Number.MAX_SAFE_INTEGER,
    ...(r.last_taken ? { lastTakenAt: new Date(r.last_taken).getTime() } : {}),
  }));
}

/**
 * The job's request at its route ended (stored, failed, canceled, given up): its slot goes back,
 * and it waits for none. When jobs wait at the route, the freed slot is granted at once to the next
 * of them in fair order (grantFree). Answers whether it held one, and the jobs granted a slot (their
 * workflows are to be woken). Idempotent.
 */
export async function releaseSlot(q: Database, jobId: string): Promise<{ released: boolean; grantees: string[] }> {
  // One statement when nobody waits at the route: it runs on every job's path.
  const { rows } = await sql<{ route: string | null; waiting: boolean }>`
    with s as (delete from route_slots where job_id = ${jobId} returning route),
         w as (delete from route_slot_waiters where job_id = ${jobId} returning 1)
    select (select route from s limit 1) as route,
      exists (select 1 from route_slot_waiters o, s where o.route = s.route and o.job_id <> ${jobId}) as waiting`.execute(q);
  const route = rows[0]?.route ?? null;
  if (!route) return { released: false, grantees: [] };
  if (!rows[0]?.waiting) return { released: true, grantees: [] };
  const grantees = await q.transaction().execute((tx) => grantAt(tx, route));
  return { released: true, grantees };
}

/**
 * Under the route's lock: clears its expired slots (a grant its job never took among them) and
 * grants the free slots to its waiters. The route's size is the one its last taker recorded.
 */
async function grantAt(tx: Tx, route: string): Promise<string[]> {
  const row = await tx.selectFrom('route_slot_routes').select('slots').where('route', '=', route).forUpdate().executeTakeFirst();
  if (!row?.slots) return [];
  await tx
    .deleteFrom('route_slots')
    .where('route', '=', route)
    .where('lease_until', '<', sql<Date>`now()`)
    .execute();
  return grantFree(tx, route, row.slots);
}

/** The reconciler's pass over every route with waiters: slots freed by expiry are granted. */
export async function grantExpired(db: Database): Promise<string[]> {
  const routes = await db.selectFrom('route_slot_waiters').select('route').distinct().execute();
  const out: string[] = [];
  for (const { route } of routes) out.push(...(await db.transaction().execute((tx) => grantAt(tx, route))));
  return out;
}

/**
 * A check of the job's live request renews its slot's lease; a slot that expired meanwhile (the
 * request still runs at the provider, so it still counts) is taken back, even past the route's
 * slots. Answers the submit attempt that took it.
 */
export async function renewSlot(q: Queryable, pool: RoutePool, who: Pick<SlotClaimant, 'jobId' | 'workspaceId' | 'weight'>, leaseMs: number): Promise<number> {
  const row = await q
    .insertInto('route_slots')
    .values({ job_id: who.jobId, route: pool.route, workspace_id: who.workspaceId, weight: who.weight, lease_until: secs(leaseMs) })
    .onConflict((oc) => oc.column('job_id').doUpdateSet({ lease_until: secs(leaseMs), route: pool.route }))
    .returning('taken_attempt')
    .executeTakeFirstOrThrow();
  return row.taken_attempt;
}

/**
 * The reconciler's sweep: slots whose lease expired (their holder vanished) or whose job is no longer
 * in flight, and waiters gone stale or whose job ended. Answers what it removed.
 */
export async function sweepSlots(q: Queryable, waiterFreshMs: number): Promise<{ slots: number; waiters: number }> {
  const slots = await q
    .deleteFrom('route_slots')
    .where((eb) =>
      eb.or([
        eb('lease_until', '<', sql<Date>`now()`),
        eb.not(
          eb.exists(
            eb.selectFrom('jobs').select('jobs.id').whereRef('jobs.id', '=', 'route_slots.job_id').where('jobs.status', 'in', ['pending', 'generating']),
          ),
        ),
      ]),
    )
    .executeTakeFirst();
  const waiters = await q
    .deleteFrom('route_slot_waiters')
    .where((eb) =>
      eb.or([
        eb('seen_at', '<', ago(waiterFreshMs)),
        eb.not(
          eb.exists(
            eb.selectFrom('jobs').select('jobs.id').whereRef('jobs.id', '=', 'route_slot_waiters.job_id').where('jobs.status', 'in', ['pending', 'generating']),
          ),
        ),
      ]),
    )
    .executeTakeFirst();
  return { slots: Number(slots.numDeletedRows), waiters: Number(waiters.numDeletedRows) };
}

/** Per route: the slots held and the fresh waiters (the metrics). */
export async function slotUsage(q: Queryable, waiterFreshMs: number): Promise<{ route: string; inUse: number; waiting: number }[]> {
  const { rows } = await sql<{ route: string; in_use: number; waiting: number }>`
    select route, sum(in_use)::int as in_use, sum(waiting)::int as waiting from (
      select route, 1 as in_use, 0 as waiting from route_slots where lease_until >= now()
      union all
      select route, 0, 1 from route_slot_waiters where seen_at >= ${ago(waiterFreshMs)}
      union all
      select route, 0, 0 from route_slot_routes
    ) u group by route order by route`.execute(q);
  return rows.map((r) => ({ route: r.route, inUse: Number(r.in_use), waiting: Number(r.waiting) }));
}
