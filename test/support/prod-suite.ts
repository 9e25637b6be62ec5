// One prod-profile suite's session on the shared stack (test/support/prod-stack.ts): the suite lock,
// the profile's database and Temporal server, and the suite's own settings written to the profile's
// overrides file, under which `stack.sh up prod` replaces every gateway and worker. Closing removes
// the overrides and brings the profile back to its own settings for the suites that follow.
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client, type Connection } from '@temporalio/client';
import { connectClient } from '../../shared/temporal-connection.js';
import { createDb, type Database } from '../../db/index.js';
import { lockProdStack, type ProdStack } from './prod-stack.js';
import { codecDataConverter } from '../../codec/payload-codec.js';

export interface ProdSuite {
  stack: ProdStack & { release(): void };
  db: Database;
  connection: Connection;
  temporal: Client;
  /** `stack.sh up prod` (`env`: e.g. PROD_DIST, another build), which must succeed; answers its messages. */
  up(env?: Record<string, string>): Promise<string>;
  /** Back to the profile's own settings (then `restore`, the suite's own clean-up on the stack), and every handle closed. */
  close(restore?: () => Promise<unknown>): Promise<void>;
}

/**
 * Locks the profile for one suite and runs it under `overrides` (`beforeUp` runs first, with the
 * database open: e.g. state an earlier run left behind). Every process is replaced, which the
 * profile's messages must say.
 */
export async function openProdSuite(overrides: Record<string, string>, opts: { beforeUp?: (db: Database) => Promise<unknown> } = {}): Promise<ProdSuite> {
  // The suite lock first: no other prod-profile suite uses the stack until this one ends.
  const stack = await lockProdStack();
  const db = createDb(stack.config.DATABASE_URL, 5);
  const connection = await connectClient(stack.config);
  // The profile's processes seal payloads: this client opens them with the profile's keys.
  const temporal = new Client({ connection, namespace: 'default', ...codecDataConverter(stack.config) });
  const overridesFile = join(stack.stateDir, 'overrides.env');
  const up = async (env?: Record<string, string>) => {
    const r = await stack.up(env);
    assert.equal(r.code, 0, r.stderr);
    return r.stderr;
  };
  const suite: ProdSuite = {
    stack,
    db,
    connection,
    temporal,
    up,
    async close(restore) {
      try {
        await rm(overridesFile, { force: true });
        await up();
        await restore?.();
      } finally {
        await connection.close();
        await db.destroy();
        stack.release();
      }
    },
  };
  try {
    await writeFile(
      overridesFile,
      Object.entries(overrides)
        .map(([k, v]) => `${k}=${v}\n`)
        .join(''),
      { mode: 0o600 },
    );
    await opts.beforeUp?.(db);
    assert.match(await up(), /the overrides changed/);
    return suite;
  } catch (err) {
    // A suite that could not start still hands the profile back as it found it.
    await suite.close().catch(() => undefined);
    throw err;
  }
}
