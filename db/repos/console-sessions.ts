// The console's browser sessions (0130_console_sessions) past their expiry: a sign-in removes its
// own key's ended sessions, but a key never signed in with again would keep its ended rows for
// ever. The reconciler role's sweep (worker/upload-sweeper.ts) removes them in bounded batches,
// oldest expiry first; an ended session already reads nothing (api/console-session.ts).
import { sql } from 'kysely';
import type { Queryable } from '../index.js';

export async function sweepConsoleSessions(db: Queryable, now = new Date(), limit = 5_000): Promise<number> {
  const r = await sql<{ removed: number }>`
    with gone as (
      delete from console_sessions
       where id_hash in (
         select id_hash from console_sessions
          where expires_at <= ${now}
          order by expires_at
          limit ${limit}::integer)
      returning 1)
    select count(*)::integer as removed from gone`.execute(db);
  return Number(r.rows[0]?.removed ?? 0);
}
