// What every admin command is: its usage, flags and run(), the context it runs in, the errors that
// become exit codes, and the flag parsers the commands share.
import type { Connection } from '@temporalio/client';
import { defaultDbTimeouts, defaultLongStatementMs, type Database, type DbTimeouts } from '../db/index.js';

export const exitCodes = { ok: 0, other: 1, usage: 2, notFound: 3, forbidden: 4, conflict: 5 } as const;

export class UsageError extends Error {
  override name = 'UsageError';
}

type FlagSpec = Record<string, { type: 'string' | 'boolean'; required?: boolean; help: string }>;

export interface Command {
  usage: string;
  summary: string;
  flags: FlagSpec;
  run(ctx: Context, flags: Record<string, string | boolean | undefined>): Promise<Output>;
}

export interface Output {
  /** The machine-readable result (printed with --json). */
  json: unknown;
  /** Human-readable lines. */
  text: string[];
}

export interface Context {
  db(): Database;
  /** The Temporal server (TEMPORAL_ADDRESS), for the `deployment` commands. */
  temporal(): Promise<Connection>;
  env: NodeJS.ProcessEnv;
  /** Asks the operator a yes/no question; false when nobody can answer (no terminal). */
  confirm(question: string): Promise<boolean>;
}

export const ws = { type: 'string', required: true, help: 'workspace id (ws_...)' } as const;

export function positiveInt(name: string, value: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a positive integer, got "${value}"`);
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new UsageError(`--${name} must be a positive integer, got "${value}"`);
  return n;
}

export function nonNegativeInt(name: string, value: string): number {
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) throw new UsageError(`--${name} must be a non-negative integer, got "${value}"`);
  return Number(value);
}

export function nonEmpty(name: string, value: string): string {
  const v = value.trim();
  if (!v) throw new UsageError(`--${name} must not be empty`);
  if (v.length > 200) throw new UsageError(`--${name} is longer than 200 characters`);
  return v;
}

export const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** The environment lacks what a command needs (a connection string, key material). */
export class ConfigProblem extends Error {
  override name = 'ConfigProblem';
}

/**
 * The admin CLI's pool: an operator's command (a migration, a backfill, a report over a large
 * workspace) is long by nature, so its statements and lock waits are bounded by
 * DATABASE_LONG_STATEMENT_TIMEOUT_MS rather than the service's short bounds.
 */
export function adminDbTimeouts(env: NodeJS.ProcessEnv): DbTimeouts {
  const raw = env.DATABASE_LONG_STATEMENT_TIMEOUT_MS;
  const n = raw === undefined || raw === '' ? defaultLongStatementMs : Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new ConfigProblem('DATABASE_LONG_STATEMENT_TIMEOUT_MS must be an integer ≥ 0');
  return { ...defaultDbTimeouts, statementMs: n, lockMs: n };
}
