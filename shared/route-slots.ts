// Route slot pools: how many requests a provider route may have in flight at the provider across the
// whole fleet (ROUTE_SLOTS), and who of the jobs waiting for a slot gets the next one. An async
// provider holds capacity from a job's submit until its result, long after the submit activity has
// returned, so Temporal's queue fairness (which orders tasks) cannot share it: this pool does, by
// workspace. Pure code: db/repos/route-slots.ts runs it under the route's row lock.
import { priorityKeys } from './task-priority.js';
import type { JobPriority } from './job-model.js';

/** One route's pool: its key in ROUTE_SLOTS (`provider` or `provider:model`) and its slots. */
export interface RoutePool {
  route: string;
  slots: number;
}

/**
 * A waiter that has not asked again within this long no longer counts (its job ended or its worker
 * died): well beyond a waiting job's fallback ask (SLOT_GRANT_FALLBACK_MS) or a waiting submit's
 * retry interval (1–10 s), plus the time its ask may wait in the task queue.
 */
export const SLOT_WAITER_FRESH_MS = 60_000;

/**
 * A waiting job is woken by a signal when a release grants it a slot; it asks again after this long
 * without one, in case the signal was lost (its sender died between the grant and the signal). The
 * grant itself is durable: it waits for its job as long as SLOT_GRANT_LEASE_MS.
 */
export const SLOT_GRANT_FALLBACK_MS = 20_000;

/**
 * How long a granted slot waits for its job's submit to take it before it goes back to the route
 * (the job's workflow is gone): longer than the fallback ask, so a lost signal never loses the grant.
 */
export const SLOT_GRANT_LEASE_MS = SLOT_WAITER_FRESH_MS;

/** The Temporal priority key of a job's priority: smaller first. */
export const slotPriorityKeys: Record<JobPriority, number> = priorityKeys;

/**
 * ROUTE_SLOTS parsed: `fal=16,alibaba:replace-actor=1` → route → slots. Throws on a malformed
 * entry (the config check reports it at start).
 */
export function parseRouteSlots(value: string | undefined): Map<string, number> {
  const pools = new Map<string, number>();
  for (const item of (value ?? '').split(',')) {
    const entry = item.trim();
    if (entry === '') continue;
    const m = /^([a-z][a-z0-9_-]*(?::[^=\s,]+)?)=(\d+)$/i.exec(entry);
    const slots = m ? Number(m[2]) : NaN;
    if (!m || !Number.isInteger(slots) || slots < 1 || slots > 100_000) {
      throw new Error(`ROUTE_SLOTS: "${entry}" is not provider=n or provider:model=n with n from 1 to 100000`);
    }
    pools.set(m[1]!.toLowerCase(), slots);
  }
  return pools;
}

/**
 * The pool a request of `provider` for `model` draws from: `provider:model` (the public model name,
 * else the provider's own model id) before `provider`; null when ROUTE_SLOTS names neither (no pool:
 * unlimited). The local renderer never has one: its fleet's activity slots are its pool.
 */
export function routePoolFor(pools: Map<string, number>, provider: string, model: string, providerModelId?: string): RoutePool | null {
  if (provider === 'local' || pools.size === 0) return null;
  for (const route of [`${provider}:${model}`, providerModelId ? `${provider}:${providerModelId}` : null, provider]) {
    const key = route?.toLowerCase();
    const slots = key ? pools.get(key) : undefined;
    if (key && slots !== undefined) return { route: key, slots };
  }
  return null;
}

/** A workspace on a route: the slots it holds and the jobs it has waiting (fresh waiters only). */
export interface WorkspaceDemand {
  workspaceId: string;
  held: number;
  waiting: number;
  /** Its fairness weight (jobs.fairness_weight; the largest of its jobs on the route). */
  weight: number;
  /** The best (smallest) priority key among its waiters. */
  bestPriority: number;
  /** When its oldest waiter started waiting (ms). */
  oldestSince: number;
  /**
   * When it was last given a slot it still holds (ms; none held: never). Among workspaces equal on
   * held / weight and priority, the one served longest ago goes first: the turns go round.
   */
  lastTakenAt?: number;
}

/**
 * A workspace's share of a route: slots × its weight / the sum of the weights of the workspaces
 * holding or waiting there.
 */
export function shareOf(slots: number, demand: WorkspaceDemand[], workspaceId: string): number {
  const sum = demand.reduce((s, d) => s + d.weight, 0);
  const own = demand.find((d) => d.workspaceId === workspaceId);
  return own && sum > 0 ? (slots * own.weight) / sum : slots;
}

export type SlotDecision = { granted: true } | { granted: false; reason: 'full' | 'share' | 'behind' };

/**
 * Whether the waiter at `position` among its workspace's waiters (0: its workspace's first, by
 * priority then age) gets a slot now. Refused when the route is full; when its workspace already
 * holds at least its share while another workspace waits; or when the free slots go, in fair order,
 * to waiters before it: the workspace with the lowest held / weight first, then the best priority,
 * then the oldest waiter, each grant counted before the next is chosen.
 */
export function decideSlot(slots: number, demand: WorkspaceDemand[], workspaceId: string, position: number): SlotDecision {
  const held = demand.reduce((s, d) => s + d.held, 0);
  const free = slots - held;
  if (free <= 0) return { granted: false, reason: 'full' };
  const own = demand.find((d) => d.workspaceId === workspaceId);
  if (!own) return { granted: true };
  const othersWait = demand.some((d) => d.workspaceId !== workspaceId && d.waiting > 0);
  if (othersWait && own.held >= shareOf(slots, demand, workspaceId)) return { granted: false, reason: 'share' };
  // The free slots go in the fair order a release hands them out in: granted if this waiter is among them.
  const grantedOwn = grantOrder(free, demand).filter((w) => w === workspaceId).length;
  return position < grantedOwn ? { granted: true } : { granted: false, reason: 'behind' };
}

/**
 * The workspaces the `free` slots of a route go to, in order (one entry per slot; a workspace may
 * come several times), among those with waiters: the same fair order as decideSlot, each grant
 * counted before the next is chosen. What a release hands out without waiting for anyone to ask.
 */
export function grantOrder(free: number, demand: WorkspaceDemand[]): string[] {
  const state = demand.filter((d) => d.waiting > 0).map((d) => ({ ...d }));
  const out: string[] = [];
  for (let i = 0; i < free; i++) {
    let next: (typeof state)[number] | undefined;
    for (const d of state) {
      if (d.waiting <= 0) continue;
      if (!next || before(d, next)) next = d;
    }
    if (!next) break;
    next.held++;
    next.waiting--;
    next.lastTakenAt = Number.MAX_SAFE_INTEGER - (free - i);
    out.push(next.workspaceId);
  }
  return out;
}

function before(a: WorkspaceDemand, b: WorkspaceDemand): boolean {
  const ra = a.held / a.weight;
  const rb = b.held / b.weight;
  if (ra !== rb) return ra < rb;
  if (a.bestPriority !== b.bestPriority) return a.bestPriority < b.bestPriority;
  const la = a.lastTakenAt ?? -1;
  const lb = b.lastTakenAt ?? -1;
  if (la !== lb) return la < lb;
  if (a.oldestSince !== b.oldestSince) return a.oldestSince < b.oldestSince;
  return a.workspaceId < b.workspaceId;
}
