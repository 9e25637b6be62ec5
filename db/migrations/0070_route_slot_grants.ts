// Route slots handed out as grants: a slot freed while jobs wait goes at once to the next waiter in
// fair order (db/repos/route-slots.ts), so the release must know the route's size. Each take records
// it on the route's row (the pool as the taker's configuration says); a grant is a slot row with
// taken_attempt 0 until its job's submit takes it.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('route_slot_routes').addColumn('slots', 'integer').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('route_slot_routes').dropColumn('slots').execute();
}
