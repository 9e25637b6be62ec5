// What a customer sees of a webhook event's delivery: the status derived from the outbox columns,
// each attempt's error class, and the receiver's URL with nothing that could be a credential.
import { REDACTED } from '../redact.js';

/**
 * Why an attempt did not deliver:
 * - `timeout`: no answer within WEBHOOK_TIMEOUT_MS;
 * - `connection`: the connection failed (refused, reset, TLS);
 * - `refused`: the URL was refused before sending (its name resolves to a forbidden address, or does not resolve);
 * - `no_secret`: the workspace has no signing secret that can be used;
 * - `http_4xx`, `http_5xx`, `http_other`: the receiver answered that status (other: 1xx or 3xx; redirects are not followed).
 * A wait for an open circuit is not an attempt (nothing is sent): it shows on the delivery as `circuit_open_until`.
 */
export const attemptErrorClasses = ['timeout', 'connection', 'refused', 'no_secret', 'http_4xx', 'http_5xx', 'http_other'] as const;
export type AttemptErrorClass = (typeof attemptErrorClasses)[number];

/** The error class of an answer's status (null: delivered). */
export function errorClassOfStatus(status: number): AttemptErrorClass | null {
  if (status >= 200 && status <= 299) return null;
  if (status >= 400 && status <= 499) return 'http_4xx';
  if (status >= 500 && status <= 599) return 'http_5xx';
  return 'http_other';
}

export const deliveryStatuses = ['pending', 'delivered', 'failed', 'superseded'] as const;
export type DeliveryStatus = (typeof deliveryStatuses)[number];

/** pending: not finished yet (waiting to be dispatched, retrying, or redelivering). */
export function deliveryStatusOf(row: { delivered_at: Date | null; failed_at: Date | null; superseded_at: Date | null }): DeliveryStatus {
  if (row.delivered_at) return 'delivered';
  if (row.superseded_at) return 'superseded';
  if (row.failed_at) return 'failed';
  return 'pending';
}

/**
 * The receiver's URL as a customer may see it: scheme, host and path, without user info, query or
 * fragment (any of which may carry a token), and with a path segment that looks like a token (long
 * and random: 20 or more letters, digits, `-` or `_` with a digit in it) replaced.
 */
export function redactedWebhookUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return REDACTED;
  }
  const path = url.pathname
    .split('/')
    .map((s) => (s.length >= 20 && /^[A-Za-z0-9_.~%-]+$/.test(s) && /[0-9]/.test(s) ? REDACTED : s))
    .join('/');
  return `${url.protocol}//${url.host}${path}`;
}

/**
 * When Temporal retries a failed attempt: the delivery workflow gives each activity run an initial
 * interval of initial × 2^(attempts before it) and a backoff coefficient of 2, so after the n-th
 * attempt of a run the wait is min(initial × 2^(n-1), max) (Temporal's retry interval,
 * https://docs.temporal.io/encyclopedia/retry-policies: initial × coefficient^(attempt-1), capped by
 * the maximum interval). Null when that would pass the run's give-up time.
 */
export function nextRetryAt(now: number, attemptOfRun: number, retry: { initialMs: number; maxIntervalMs: number }, giveUpAt: number | null): Date | null {
  const wait = Math.min(retry.initialMs * 2 ** Math.max(0, attemptOfRun - 1), retry.maxIntervalMs);
  const at = now + wait;
  if (giveUpAt !== null && at >= giveUpAt) return null;
  return new Date(at);
}
