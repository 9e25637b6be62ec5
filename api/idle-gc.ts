// Gives memory back when the gateway goes quiet. Node never tells V8 that it is idle, so garbage
// left by a burst of traffic (request bodies streamed through, parsed JSON) stays until the next
// burst: ~25 MB of dead socket buffers after ten concurrent 20 MB uploads. Once the server has
// seen no request for `idleMs` after start-up or some activity, one full collection runs (twice: array-buffer
// memory is released by the collection after the one that finds it dead). It runs at most once
// per quiet period, so it never competes with traffic.
import type { Server } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Gc = () => void;

function exposeGc(): Gc {
  const existing = (globalThis as { gc?: Gc }).gc;
  if (existing) return existing;
  setFlagsFromString('--expose-gc');
  // Contexts created after the flag is set get `gc`; the flag itself stays harmless.
  return runInNewContext('gc') as Gc;
}

/**
 * How long the gateway waits without a request before its one full collection: long enough that a
 * steady trickle of requests never pays for one, short enough that a burst's memory is back soon.
 */
export const IDLE_COLLECT_AFTER_MS = 10_000;

/** Starts watching `server`; returns a function that stops it. `idleMs` 0 disables it. */
export function collectWhenIdle(server: Server, idleMs: number): () => void {
  if (idleMs <= 0) return () => undefined;
  const gc = exposeGc();
  // Start-up leaves garbage too (module compilation): the first quiet period collects it.
  let lastRequest = Date.now();
  let collected = false;
  const onRequest = () => {
    lastRequest = Date.now();
    collected = false;
  };
  server.on('request', onRequest);
  const timer = setInterval(
    () => {
      if (collected || Date.now() - lastRequest < idleMs) return;
      collected = true;
      gc();
      setImmediate(gc);
    },
    Math.max(250, Math.floor(idleMs / 4)),
  );
  timer.unref();
  return () => {
    clearInterval(timer);
    server.off('request', onRequest);
  };
}
