// Small helpers of the client: waiting that an abort signal cuts short, idempotency keys, query strings.

/** Waits `ms`, or rejects when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

export function query(params: object | undefined): string {
  if (!params) return '';
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null) continue;
    // A list repeats its name (tag=a&tag=b); an object is sent as name[key]=value (metadata filters).
    if (Array.isArray(v)) for (const item of v) q.append(k, String(item));
    else if (typeof v === 'object') for (const [key, item] of Object.entries(v as Record<string, unknown>)) q.append(`${k}[${key}]`, String(item));
    else q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
