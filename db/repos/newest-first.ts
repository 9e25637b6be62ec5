// Keyset pages newest first on (created_at, id), the order of every list that grows with use (job
// lists, the audit log, webhook deliveries): a cursor holds the last row's created_at in exact
// microseconds and its id, so a page never skips or repeats a row however many share a moment.
import { sql } from 'kysely';

export interface NewestFirstKey {
  /** created_at in microseconds since the epoch, as text (exact beyond a double's precision). */
  createdAtMicros: string;
  id: string;
}

/** Select it beside the row: its cursor part (`created_us`). */
export const createdMicros = () => sql<string>`(extract(epoch from created_at) * 1000000)::bigint::text`.as('created_us');

/** The rows after `key` in newest-first order. */
export const olderThan = (key: NewestFirstKey) =>
  sql<boolean>`(created_at, id) < (timestamptz 'epoch' + ${key.createdAtMicros}::bigint * interval '1 microsecond', ${key.id})`;

/** Splits the limit + 1 rows a page query read into the page and the key of the next one. */
export function newestFirstPage<R extends { created_us: string; id: string }>(
  rows: R[],
  limit: number,
): { rows: Omit<R, 'created_us'>[]; next: NewestFirstKey | null } {
  const kept = rows.slice(0, limit);
  const last = kept[kept.length - 1];
  return {
    rows: kept.map(({ created_us: _, ...r }) => r),
    next: rows.length > limit && last ? { createdAtMicros: last.created_us, id: last.id } : null,
  };
}
