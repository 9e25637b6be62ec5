// One error class for every failure the API answers: `{ error: { code, message } }` plus the HTTP
// status, the gateway's request id and, for 429, how long to wait.

export class MediaGenError extends Error {
  override readonly name = 'MediaGenError';
  /** HTTP status; 0 when no answer came (network failure). */
  readonly status: number;
  /** The API's stable error code (`invalid_request`, `insufficient_credits`, …), or `network_error`. */
  readonly code: string;
  /** Milliseconds to wait before retrying (429 `retry_after_ms`, else the Retry-After header). */
  readonly retryAfterMs: number | null;
  /** The gateway's X-Request-Id, to quote when reporting a problem. */
  readonly requestId: string | null;
  /** The whole error body as answered (e.g. `status` of a 409 `not_ready`). */
  readonly body: unknown;

  constructor(init: {
    status: number;
    code: string;
    message: string;
    retryAfterMs?: number | null;
    requestId?: string | null;
    body?: unknown;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.retryAfterMs = init.retryAfterMs ?? null;
    this.requestId = init.requestId ?? null;
    this.body = init.body ?? null;
  }
}

/** Builds the MediaGenError for a non-2xx answer whose body text has already been read. */
export function errorFromResponse(res: Response, text: string): MediaGenError {
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  // The error shape of the API, read defensively: any other body leaves the fallbacks below.
  const shaped = (body && typeof body === 'object' ? body : {}) as { retry_after_ms?: unknown; error?: { code?: unknown; message?: unknown } | null };
  const requestId = res.headers.get('x-request-id');
  const retryAfterHeader = Number(res.headers.get('retry-after'));
  const retryAfterMs =
    typeof shaped.retry_after_ms === 'number'
      ? shaped.retry_after_ms
      : Number.isFinite(retryAfterHeader) && res.headers.has('retry-after')
        ? retryAfterHeader * 1000
        : null;
  const code = typeof shaped.error?.code === 'string' ? shaped.error.code : `http_${res.status}`;
  const message = typeof shaped.error?.message === 'string' ? shaped.error.message : `HTTP ${res.status} ${res.statusText}`.trim();
  return new MediaGenError({ status: res.status, code, message, retryAfterMs, requestId, body });
}
