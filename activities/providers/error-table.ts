// One shape for every adapter's error classification: a table of rows, each matching an answer by
// HTTP status, the provider's own error code or type, a header or the body's text, and naming its
// class. The first matching row wins; every table ends with the generic HTTP rows below, so an
// answer no provider row names is still classed by its status.
//
// Classes (what the job does, activities/jobs/provider-kit.ts):
//  - retry: the provider's trouble, passing: the step is retried (after the wait the provider asked
//    for), and the job moves to its next route once the failover budget is spent. `ended` rows say
//    the provider's request itself failed (an infrastructure failure the provider reported), so the
//    job may move even after the provider reported the request running.
//  - failover: another route can serve the job now, waiting does not help. `reason` says why: our
//    `account` at the provider (credentials, billing, quota) or the `route` (the model is gone, not
//    enabled for us, or not served in our region or plan).
//  - customer: the request's own fault (invalid input, content policy): final wherever it runs.
//  - final: neither retried nor moved: the provider refused it for a reason no route changes.
import { ProviderError, type PollResult } from './types.js';
import { providerReason, retryAfterFromHeaders, scrub } from './error-text.js';

/** How a message names the provider and its call. */
interface ErrorPrefix {
  provider: string;
  what: string;
  secrets?: readonly (string | undefined)[] | undefined;
}

export type ErrorClass = 'retry' | 'failover' | 'customer' | 'final';

/** Why another route can serve a job at once. */
type FailoverReason = 'account' | 'route';

/** What is known of one failed answer (an HTTP error, or a task or operation that ended failed). */
export interface ErrorFacts {
  /** HTTP status; absent for a task's or operation's own error inside a 200 answer. */
  status?: number | undefined;
  /** The provider's machine-readable error code or type. */
  code?: string | undefined;
  /** The body as received (patterns look into it; the reason shown is taken from it). */
  text?: string | undefined;
  headers?: Headers | undefined;
  /** Which call answered, for rows that hold for one call only. */
  call?: 'submit' | 'check' | undefined;
  /** The human reason when it is not in `text` (a task's message). */
  reason?: string | undefined;
}

interface ErrorRow {
  /** One status, a list, or a class of them; absent: any status, or none. */
  status?: number | readonly number[] | '4xx' | '5xx' | undefined;
  /** The provider's code or type: exact names, or a pattern. */
  code?: string | readonly string[] | RegExp | undefined;
  /** A header and the pattern its value matches. */
  header?: readonly [name: string, value: RegExp] | undefined;
  /** A pattern in the body. */
  text?: RegExp | undefined;
  call?: 'submit' | 'check' | undefined;
  /** A condition the fields above cannot say (Google's quota details). */
  when?: ((f: ErrorFacts) => boolean) | undefined;
  class: ErrorClass;
  /** failover rows: the account or the route. */
  reason?: FailoverReason | undefined;
  /** retry rows: the provider's request itself failed (it will not deliver a result later). */
  ended?: boolean | undefined;
  /** What the message says happened ("rate limited"). */
  says: string;
  /** Advice after it ("check its billing"). */
  hint?: string | undefined;
  /** Where the provider documents it. */
  source?: string | undefined;
}

export type ErrorTable = readonly ErrorRow[];

const contentPolicyPattern = /content[ _-]?polic|moderation|safety|nsfw|violat|blocked|flagged/i;

/**
 * The classes every HTTP API shares, after a provider's own rows: 429 and 5xx/408 are passing, 401/403
 * and 402 are our account's, a content-policy wording is the customer's, any other 4xx the request's.
 * OpenAI's 429 `insufficient_quota` is here as other hosts of its API (Azure, xAI) answer it too.
 */
export const httpRows: ErrorTable = [
  {
    status: 429,
    text: /insufficient_quota/,
    class: 'failover',
    reason: 'account',
    says: 'the provider account has no quota left',
    hint: 'check its billing',
  },
  { status: 429, class: 'retry', says: 'rate limited' },
  { status: [408, 500, 502, 503, 504], class: 'retry', says: 'provider error' },
  { status: '5xx', class: 'retry', says: 'provider error' },
  { status: [401, 403], class: 'failover', reason: 'account', says: 'the provider refused our credentials', hint: 'check the API key configuration' },
  { status: 402, class: 'failover', reason: 'account', says: 'the provider account cannot pay for this', hint: 'check its billing' },
  { status: '4xx', text: contentPolicyPattern, class: 'customer', says: "rejected by the provider's content policy" },
  { status: '4xx', class: 'customer', says: 'request rejected' },
  { class: 'final', says: 'generation failed' },
];

/** A provider's table followed by the shared HTTP rows. */
export function errorTable(rows: ErrorTable): ErrorTable {
  return [...rows, ...httpRows];
}

function statusMatches(want: ErrorRow['status'], status: number | undefined): boolean {
  if (want === undefined) return true;
  if (status === undefined) return false;
  if (want === '4xx') return status >= 400 && status < 500;
  if (want === '5xx') return status >= 500 && status < 600;
  return typeof want === 'number' ? want === status : want.includes(status);
}

function codeMatches(want: ErrorRow['code'], code: string | undefined): boolean {
  if (want === undefined) return true;
  if (code === undefined) return false;
  if (typeof want === 'string') return want === code;
  if (want instanceof RegExp) return want.test(code);
  return want.includes(code);
}

/** The first row of `table` that matches. */
export function classify(table: ErrorTable, f: ErrorFacts): ErrorRow {
  const row = table.find(
    (r) =>
      statusMatches(r.status, f.status) &&
      codeMatches(r.code, f.code) &&
      (r.call === undefined || r.call === f.call) &&
      (r.header === undefined || r.header[1].test(f.headers?.get(r.header[0]) ?? '')) &&
      (r.text === undefined || r.text.test(f.text ?? '')) &&
      (r.when === undefined || r.when(f)),
  );
  return row ?? httpRows.at(-1)!;
}

/**
 * The ProviderError of a row: `prefix` names the provider and call ("fal result"); the message keeps
 * the provider's own reason (secrets scrubbed) and the status. `over` sets the wait (instead of the
 * headers') and whether the provider's request ended.
 */
export function errorOfRow(
  row: ErrorRow,
  f: ErrorFacts,
  opts: ErrorPrefix | { prefix: string; secrets?: readonly (string | undefined)[] | undefined },
  over: { retryAfterMs?: number | undefined; ended?: boolean } = {},
): ProviderError {
  const prefix = 'prefix' in opts ? opts.prefix : `${opts.provider} ${opts.what}`;
  const said = f.reason ?? providerReason(f.text ?? '');
  // The provider's code beside its words, when the body's shape left it out (fal's `error_type`).
  const reason = scrub(said && f.code && !said.includes(f.code) ? `${said} (${f.code})` : said, opts.secrets);
  const wait = row.class === 'retry' ? (over.retryAfterMs ?? (f.headers ? retryAfterFromHeaders(f.headers, Date.now(), f.status) : undefined)) : undefined;
  const status = f.status !== undefined ? ` (HTTP ${f.status})` : '';
  const waitText = wait !== undefined && f.status === 429 ? `; retry after ${Math.ceil(wait / 1000)} s` : '';
  const message = `${prefix}: ${row.says}${status}${waitText}${row.hint ? `; ${row.hint}` : ''}${reason ? `: ${reason}` : ''}`;
  return new ProviderError(message, {
    retryable: row.class === 'retry',
    retryAfterMs: wait,
    status: f.status,
    account: row.class === 'failover' && row.reason !== 'route',
    route: row.class === 'failover' && row.reason === 'route',
    ended: row.class === 'retry' && (over.ended ?? row.ended === true),
  });
}

/**
 * A task's or operation's own failure: retried or moved (thrown by the adapter), or a final failed
 * state (the customer's or nobody's) with the message.
 */
export function taskOutcome(table: ErrorTable, f: ErrorFacts, prefix: string): ProviderError | PollResult {
  const row = classify(table, f);
  // A failed task is over: asking about it again gives the same answer, so a retry row ends it.
  const err = errorOfRow(row, f, { prefix }, { ended: true });
  if (row.class === 'retry' || row.class === 'failover') return err;
  return { state: 'failed', message: err.message };
}
