// Who holds the gateway's open event streams, and how many each may hold: a stream lasts as long as
// its job (up to a video's deadline) while it cost one polling-class request, so without caps one
// workspace could hold every socket and every byte of buffer the process has. Each stream is
// admitted against three caps, in this order — its API key's, its workspace's and the process's —
// and a refusal is a 429 naming the cap that was reached. The caps are per gateway process (each
// replica protects its own memory); an operator scales them with the replica count.
//
// Streams are registered with their API key, so a revoked key's streams end at once (the key
// listener's notification, api/auth.ts), and after the listener reconnects every stream whose key
// is no longer live ends too (a revocation may have been missed while it was down). A key with an
// `expires_at` has its streams ended at that moment: a stream opened before it never outlives the
// key (a reconnect is then the 401 every expired key gets).
import { ApiError } from './errors.js';

interface StreamCaps {
  perKey: number;
  perWorkspace: number;
  total: number;
}

interface StreamOwner {
  workspaceId: string;
  apiKeyId: string;
  /** The key's rules: its expiry (epoch ms; null: none) ends the stream. */
  rules?: { expiresAt: number | null };
}

/** The longest a timer waits (node's setTimeout bound); a later expiry re-arms from there. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Calls `close` at `at` (epoch ms); the returned function cancels it. */
function closeAt(at: number, close: () => void): () => void {
  let timer: NodeJS.Timeout;
  const arm = () => {
    const wait = at - Date.now();
    timer = setTimeout(wait > MAX_TIMER_MS ? arm : close, Math.min(Math.max(wait, 0), MAX_TIMER_MS));
    timer.unref();
  };
  arm();
  return () => clearTimeout(timer);
}

export interface StreamRegistry {
  /**
   * Admits one stream, or throws a 429 ApiError naming the cap reached. `close` ends the stream
   * (revocation, the key's expiry); the returned function releases its place (call it once the
   * stream has ended).
   */
  admit(owner: StreamOwner, close: () => void): () => void;
  /** Ends every stream opened with the key; returns how many. */
  closeKey(apiKeyId: string): number;
  /** Ends every stream whose key is not in `liveKeyIds`. */
  retainKeys(liveKeyIds: ReadonlySet<string>): number;
  /** Streams open now: in all, or of one key / workspace. */
  open(of?: { apiKeyId?: string; workspaceId?: string }): number;
}

interface Entry {
  owner: StreamOwner;
  close: () => void;
}

/** Seconds a refused client should wait before trying again: streams end when their job does. */
const RETRY_AFTER_SECONDS = 30;

export function createStreamRegistry(caps: StreamCaps): StreamRegistry {
  const byKey = new Map<string, Set<Entry>>();
  const perWorkspace = new Map<string, number>();
  let total = 0;

  const refuse = (message: string) => {
    throw new ApiError(429, 'too_many_streams', message, { retry_after_ms: RETRY_AFTER_SECONDS * 1000 });
  };

  const closeAll = (entries: Iterable<Entry>) => {
    let n = 0;
    for (const e of [...entries]) {
      n++;
      e.close();
    }
    return n;
  };

  return {
    admit(owner, close) {
      const ofKey = byKey.get(owner.apiKeyId)?.size ?? 0;
      if (ofKey >= caps.perKey) refuse(`this API key already has ${ofKey} open event streams, the per-key cap (${caps.perKey}); close one or poll instead`);
      const ofWorkspace = perWorkspace.get(owner.workspaceId) ?? 0;
      if (ofWorkspace >= caps.perWorkspace)
        refuse(`this workspace already has ${ofWorkspace} open event streams, the per-workspace cap (${caps.perWorkspace}); close one or poll instead`);
      if (total >= caps.total) refuse(`this gateway holds its cap of ${caps.total} open event streams; retry later or poll instead`);
      const entry: Entry = { owner, close };
      let set = byKey.get(owner.apiKeyId);
      if (!set) byKey.set(owner.apiKeyId, (set = new Set()));
      set.add(entry);
      perWorkspace.set(owner.workspaceId, ofWorkspace + 1);
      total++;
      const expiresAt = owner.rules?.expiresAt ?? null;
      const cancelExpiry = expiresAt === null ? undefined : closeAt(expiresAt, close);
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        cancelExpiry?.();
        total--;
        set.delete(entry);
        if (set.size === 0 && byKey.get(owner.apiKeyId) === set) byKey.delete(owner.apiKeyId);
        const left = (perWorkspace.get(owner.workspaceId) ?? 1) - 1;
        if (left > 0) perWorkspace.set(owner.workspaceId, left);
        else perWorkspace.delete(owner.workspaceId);
      };
    },
    closeKey(apiKeyId) {
      const set = byKey.get(apiKeyId);
      return set ? closeAll(set) : 0;
    },
    retainKeys(live) {
      let n = 0;
      for (const [keyId, set] of [...byKey]) if (!live.has(keyId)) n += closeAll(set);
      return n;
    },
    open(of) {
      if (of?.apiKeyId !== undefined) return byKey.get(of.apiKeyId)?.size ?? 0;
      if (of?.workspaceId !== undefined) return perWorkspace.get(of.workspaceId) ?? 0;
      return total;
    },
  };
}
