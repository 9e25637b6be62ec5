// The console's one way to the API: the TypeScript client over the session cookie (no key in the
// page). Signing in and out are the gateway's session exchange (POST/DELETE /console/session),
// which is not part of the public API.
import { MediaGenClient, MediaGenError } from '@mediagen/client';

export const client = new MediaGenClient({ baseUrl: location.origin, session: true, maxRetries: 1, onWarning: () => undefined });

/** The API's message for a failure, as the console shows it. */
export function messageOf(err: unknown): string {
  if (err instanceof MediaGenError) return `${err.message} (${err.code})`;
  return err instanceof Error ? err.message : String(err);
}

export const isUnauthorized = (err: unknown): boolean => err instanceof MediaGenError && err.status === 401;

async function sessionError(res: Response): Promise<Error> {
  const body = (await res.json().catch(() => null)) as { error?: { code: string; message: string } } | null;
  return new Error(body?.error ? `${body.error.message} (${body.error.code})` : `sign-in failed (${res.status})`);
}

/** Exchanges the key for a session cookie; the key is not kept anywhere in the page. */
export async function signIn(apiKey: string): Promise<void> {
  const res = await fetch('/console/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: apiKey }) });
  if (!res.ok) throw await sessionError(res);
}

export async function signOut(): Promise<void> {
  const res = await fetch('/console/session', { method: 'DELETE' });
  if (!res.ok) throw await sessionError(res);
}
