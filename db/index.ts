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

/** The defaults of DATABASE_STATEMENT_TIMEOUT_MS, DATABASE_LOCK_TIMEOUT_MS and DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS. */
export const defaultDbTimeouts: DbTimeouts = { statementMs: 30_000, lockMs: 5_000, idleInTransactionMs: 60_000 };

/** The default of DATABASE_LONG_STATEMENT_TIMEOUT_MS: migrations, the admin CLI and retention sweeps. */
export const defaultLongStatementMs = 600_000;

/** A process's pool timeouts from its configuration. */
export function dbTimeouts(config: {
  DATABASE_STATEMENT_TIMEOUT_MS: number;
  DATABASE_LOCK_TIMEOUT_MS: number;
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: number;
}): DbTimeouts {
  return {
    statementMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    lockMs: config.DATABASE_LOCK_TIMEOUT_MS,
    idleInTransactionMs: config.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
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
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
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
    const query = client.query.bind(client) as (text: unknown, values?: unknown) => Promise<unknown>;
    (client as { query: unknown }).query = (text: unknown, values?: unknown) => {
      if (typeof text !== 'string') return query(text, values);
      const verb = /^\s*(\w+)/.exec(text)?.[1]?.toLowerCase() ?? 'query';
      return withSpan(`pg ${verb}`, { 'db.system': 'postgresql', 'db.statement': text }, () => query(text, values), SpanKind.CLIENT);
    };
  });
}
