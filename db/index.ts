// The database handle: a Kysely instance over a pg pool, with bigint columns read as numbers
// (credits and sizes stay far below 2^53) and a ping for readiness checks.
import pg from 'pg';
import { Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import type { DB } from './schema.js';
import { SpanKind, tracingEnabled, withSpan } from '../shared/tracing.js';

// int8 (bigint) → number; our balances and byte sizes fit in a double exactly.
pg.types.setTypeParser(20, (v) => Number(v));

export type Database = Kysely<DB>;
export type Tx = Transaction<DB>;
/** Repositories take either, so the same code runs inside or outside a transaction. */
export type Queryable = Kysely<DB> | Transaction<DB>;

/** `timeouts`: for a pool that must fail fast rather than queue (the rate limiter's). */
export function createDb(
  databaseUrl: string,
  poolSize = 10,
  timeouts: Pick<pg.PoolConfig, 'connectionTimeoutMillis' | 'statement_timeout' | 'query_timeout' | 'lock_timeout'> = {},
): Database {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: poolSize, ...timeouts });
  // An idle client that errors (server restart) must not crash the process.
  pool.on('error', () => undefined);
  if (tracingEnabled()) traceStatements(pool);
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
}

export async function pingDb(db: Database): Promise<void> {
  await sql`select 1`.execute(db);
}

const traced = new WeakSet<pg.PoolClient>();

/**
 * A child span per statement (its SQL text with placeholders, never the parameters). Kysely runs
 * every query through `client.query(sql, params)` of a pooled client, so wrapping the clients the
 * pool hands out covers transactions too.
 */
function traceStatements(pool: pg.Pool): void {
  pool.on('acquire', (client) => {
    if (traced.has(client)) return;
    traced.add(client);
    const query = client.query.bind(client) as (text: unknown, values?: unknown) => Promise<unknown>;
    (client as { query: unknown }).query = (text: unknown, values?: unknown) => {
      if (typeof text !== 'string') return query(text, values);
      const verb = /^\s*(\w+)/.exec(text)?.[1]?.toLowerCase() ?? 'query';
      return withSpan(`pg ${verb}`, { 'db.system': 'postgresql', 'db.statement': text }, () => query(text, values), SpanKind.CLIENT);
    };
  });
}
