// Kysely table types of the route slot pools (0024_route_slots, 0070_route_slot_grants): the fleet-wide
// count of requests in flight per provider route (shared/route-slots.ts, db/repos/route-slots.ts).
import type { ColumnType, Generated } from 'kysely';

/** A route with a slot pool (0024_route_slots): the row every take of the route locks. */
interface RouteSlotRouteTable {
  route: string;
  created_at: Generated<Date>;
  /** The route's slots as its last taker's ROUTE_SLOTS said: how many its releases may grant. */
  slots: number | null;
}
/** A slot a job holds at its route, from just before its provider submit until its request there ends. */
interface RouteSlotTable {
  job_id: string;
  /** The ROUTE_SLOTS key: `provider` or `provider:model`. */
  route: string;
  workspace_id: string;
  weight: Generated<number>;
  taken_at: Generated<Date>;
  /** Renewed by the job's checks; an expired slot goes back to the route. */
  lease_until: ColumnType<Date, Date | string, Date | string>;
  /**
   * The submit step's attempt that took it (the attempts before it waited for a slot); 0 while it is
   * a grant its job's submit has not taken yet.
   */
  taken_attempt: Generated<number>;
}
/** A job waiting for a slot of its route: served in fair order by workspace. */
interface RouteSlotWaiterTable {
  job_id: string;
  route: string;
  workspace_id: string;
  weight: Generated<number>;
  /** 1 high, 3 normal, 5 low. */
  priority_key: Generated<number>;
  since: Generated<Date>;
  /** The job's last ask: a waiter not seen for a while no longer counts. */
  seen_at: Generated<Date>;
}

/** This file's tables, as the database interface (db/schema.ts `DB`) lists them. */
export interface RouteSlotTables {
  route_slot_routes: RouteSlotRouteTable;
  route_slots: RouteSlotTable;
  route_slot_waiters: RouteSlotWaiterTable;
}
