// The database handle: a Kysely instance over a pg pool, with bigint columns read as numbers
// (credits and sizes stay far below 2^53) and a ping for readiness checks.
import { accessSync, constants } from 'node:fs';
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

/**
 * How long Postgres lets one of the pool's sessions wait or run (milliseconds; 0 turns one off).
 * Sent as startup parameters, so every statement of every pool is bounded, transactions included:
 * a statement past `statementMs` or waiting on a lock past `lockMs` fails (57014 / 55P03) and its
 * caller retries or gives up by its own rules, and a transaction left open by a stalled process is
 * ended by the server after `idleInTransactionMs`, so its row locks do not outlive it.
 */
export interface DbTimeouts {
  statementMs: number;
  lockMs: number;
  idleInTransactionMs: number;
}

/** The defaults of DATABASE_STATEMENT_TIMEOUT_MS and DATABASE_LOCK_TIMEOUT_MS, and the idle-in-transaction bound derived from the first. */
export const defaultDbTimeouts: DbTimeouts = { statementMs: 30_000, lockMs: 5_000, idleInTransactionMs: 60_000 };

/** The default of DATABASE_LONG_STATEMENT_TIMEOUT_MS: migrations, the admin CLI and retention sweeps. */
export const defaultLongStatementMs = 600_000;

/** A process's pool timeouts from its configuration. */
export function dbTimeouts(config: { DATABASE_STATEMENT_TIMEOUT_MS: number; DATABASE_LOCK_TIMEOUT_MS: number }): DbTimeouts {
  return {
    statementMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    lockMs: config.DATABASE_LOCK_TIMEOUT_MS,
    // A transaction that sits idle for twice the longest statement is stalled, not busy: the server
    // ends its session so its row locks do not outlive it (no statement bound: no idle bound either).
    idleInTransactionMs: 2 * config.DATABASE_STATEMENT_TIMEOUT_MS,
  };
}

/**
 * `bounds`: the session timeouts (defaultDbTimeouts when not given, so no pool is unbounded).
 * `timeouts`: client-side ones, for a pool that must fail fast rather than queue (the rate
 * limiter's); a `statement_timeout` or `lock_timeout` there wins over `bounds`.
 */
export function createDb(
  databaseUrl: string,
  poolSize = 10,
  timeouts: Pick<pg.PoolConfig, 'connectionTimeoutMillis' | 'statement_timeout' | 'query_timeout' | 'lock_timeout' | 'idleTimeoutMillis'> = {},
  bounds: DbTimeouts = defaultDbTimeouts,
): Database {
  checkTlsFiles(databaseUrl);
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: poolSize,
    statement_timeout: bounds.statementMs,
    lock_timeout: bounds.lockMs,
    idle_in_transaction_session_timeout: bounds.idleInTransactionMs,
    ...timeouts,
  });
  // A client that loses its connection (a server restart, a failover, a cut network) must not crash
  // the process. An idle one reports to the pool ('error' below); a checked-out one between two
  // statements (inside a transaction) has no listener of its own, so it gets one here: the next
  // statement fails with the error instead, and the pool drops the client when it is released.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  if (tracingEnabled()) traceStatements(pool);
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  pools.set(db, pool);
  return db;
}

const pools = new WeakMap<object, pg.Pool>();

/**
 * Runs a statement whose text never changes as a named prepared statement on the pool of `db`:
 * each connection sends and Postgres parses it once, and plans it once it has seen that a generic
 * plan does as well (plan_cache_mode auto), instead of on every call. For the hottest reads only,
 * and never with `*` in the select list: a prepared statement fails ("cached plan must not change
 * result type") once a migration adds a column to a table it reads. Answers null when `db` is not a
 * pool's database (a transaction): the caller then runs the statement as usual.
 */
export async function runPrepared<R>(db: Queryable, name: string, text: string, values: unknown[]): Promise<R[] | null> {
  const pool = pools.get(db);
  if (!pool) return null;
  // A client of its own rather than pool.query, so the statement goes through the client's query
  // as Kysely's do (traced when tracing is on).
  const client = await pool.connect();
  try {
    const rows = (await client.query<R & pg.QueryResultRow>({ name, text, values })).rows;
    client.release();
    return rows;
  } catch (err) {
    // An error the server answered (a SQLSTATE) leaves the connection usable; any other (a cut
    // connection) drops the client instead of handing it to the next statement.
    const answered = typeof (err as { code?: unknown }).code === 'string' && /^[0-9A-Z]{5}$/.test((err as { code: string }).code);
    client.release(answered ? undefined : (err as Error));
    throw err;
  }
}

/**
 * TLS to Postgres is configured in the URL (`sslmode=verify-full&sslrootcert=<CA file>`, plus
 * sslcert/sslkey for a client certificate): pg-connection-string reads those files at every new
 * connection, so one that cannot be read would only surface at the first query. Checked here, at
 * start, naming the parameter and the file (never the URL, which may hold a password).
 */
function checkTlsFiles(databaseUrl: string): void {
  let params: URLSearchParams;
  try {
    params = new URL(databaseUrl).searchParams;
  } catch {
    return; // not a URL (a libpq key=value string): pg reports its own parse errors
  }
  for (const name of ['sslrootcert', 'sslcert', 'sslkey']) {
    const file = params.get(name);
    if (!file) continue;
    try {
      accessSync(file, constants.R_OK);
    } catch (err) {
      throw new Error(`DATABASE_URL's ${name} file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
}

/**
 * Runs `fn` in a transaction whose statements may run for `statementMs` and wait on locks for
 * `lockMs` (SET LOCAL: the pooled session's own bounds come back at its end). For the work that is
 * long by nature: a retention sweep's batch, a migration.
 */
export async function withLongStatements<T>(db: Database, bounds: { statementMs: number; lockMs?: number }, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (tx) => {
    await sql`select set_config('statement_timeout', ${String(bounds.statementMs)}, true)`.execute(tx);
    if (bounds.lockMs !== undefined) await sql`select set_config('lock_timeout', ${String(bounds.lockMs)}, true)`.execute(tx);
    return fn(tx);
  });
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
    const query = client.query.bind(client) as (text: unknown, values?: unknown, callback?: unknown) => Promise<unknown>;
    (client as { query: unknown }).query = (text: unknown, values?: unknown, callback?: unknown) => {
      // A string, or a query config (a named prepared statement: runPrepared). A call with a
      // callback (the pool's own pool.query) is passed through as it is.
      const statement = typeof text === 'string' ? text : (text as { text?: unknown } | null)?.text;
      if (typeof statement !== 'string' || typeof values === 'function' || callback !== undefined) return query(text, values, callback);
      const verb = /^\s*(\w+)/.exec(statement)?.[1]?.toLowerCase() ?? 'query';
      return withSpan(`pg ${verb}`, { 'db.system': 'postgresql', 'db.statement': statement }, () => query(text, values), SpanKind.CLIENT);
    };
  });
}
