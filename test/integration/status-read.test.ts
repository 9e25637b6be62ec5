// The status poll's one statement runs as a named prepared statement (db/index.ts runPrepared): it
// must answer exactly what the same statement answers unprepared, keep answering after a migration
// adds a column to `jobs` while gateways run (a prepared `select *` would then fail with "cached
// plan must not change result type" on every connection that prepared it), and still refuse a
// revoked key and another workspace's job.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createDb, type Database } from '../../db/index.js';
import { jobForStatusRead } from '../../db/repos/queue.js';
import { createTenant, createTestDatabase, insertImageJob, type Tenant, type TestDatabase } from '../support/stack.js';

let tdb: TestDatabase;
let db: Database;
let t: Tenant;

before(async () => {
  tdb = await createTestDatabase();
  // One connection, so every read below reuses the one prepared statement.
  db = createDb(tdb.url, 1);
  t = await createTenant(tdb.db);
});

after(async () => {
  await db?.destroy();
  await tdb?.drop();
});

const args = (id: string, over: Partial<{ workspaceId: string; liveKeyId: string }> = {}) => ({
  id,
  kind: 'image' as const,
  workspaceId: over.workspaceId ?? t.workspaceId,
  liveKeyId: over.liveKeyId ?? t.apiKeyId,
});

describe('the status read as a prepared statement', () => {
  test('answers what the unprepared statement answers, queue position included', async () => {
    const first = await insertImageJob(tdb.db, t);
    const second = await insertImageJob(tdb.db, t);
    for (const job of [first, second]) {
      const prepared = await jobForStatusRead(db, args(job.id));
      // Inside a transaction the same statement runs unprepared, through Kysely.
      const plain = await db.transaction().execute((tx) => jobForStatusRead(tx, args(job.id)));
      assert.ok(prepared);
      assert.deepEqual(prepared, plain);
    }
    assert.equal((await jobForStatusRead(db, args(first.id)))!.queue_position, 1);
    assert.equal((await jobForStatusRead(db, args(second.id)))!.queue_position, 2);
  });

  test('keeps answering after a migration adds a column to jobs', async () => {
    const job = await insertImageJob(tdb.db, t);
    for (let i = 0; i < 6; i++) assert.equal((await jobForStatusRead(db, args(job.id)))?.id, job.id);
    await sql`alter table jobs add column added_by_a_later_migration integer`.execute(tdb.db);
    try {
      assert.equal((await jobForStatusRead(db, args(job.id)))?.id, job.id);
    } finally {
      await sql`alter table jobs drop column added_by_a_later_migration`.execute(tdb.db);
    }
  });

  test("answers nothing for another workspace's job or a revoked key", async () => {
    const job = await insertImageJob(tdb.db, t);
    const other = await createTenant(tdb.db);
    assert.equal(await jobForStatusRead(db, args(job.id, { workspaceId: other.workspaceId, liveKeyId: other.apiKeyId })), undefined);
    await tdb.db.updateTable('api_keys').set({ revoked_at: new Date() }).where('id', '=', other.apiKeyId).execute();
    const theirs = await insertImageJob(tdb.db, other);
    assert.equal(await jobForStatusRead(db, args(theirs.id, { workspaceId: other.workspaceId, liveKeyId: other.apiKeyId })), undefined);
  });
});
