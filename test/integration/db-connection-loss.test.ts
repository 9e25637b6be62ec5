// A Postgres connection lost while a transaction holds it between two statements (a server restart
// or failover mid-request), on the real Postgres through a loopback proxy the test cuts: the process
// does not crash on the client's 'error' event, the transaction's next statement fails, and once
// the server is back the same pool serves queries on a fresh connection.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTestDatabase, waitFor, type TestDatabase } from '../support/stack.js';
import { startTcpProxy, targetOf, throughProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { createDb, type Database } from '../../db/index.js';

let tdb: TestDatabase;
let proxy: TcpProxy;
let db: Database;

before(async () => {
  tdb = await createTestDatabase();
  proxy = await startTcpProxy(targetOf(tdb.url));
  db = createDb(throughProxy(tdb.url, proxy), 2);
});

after(async () => {
  proxy?.restore();
  await db?.destroy();
  await proxy?.close();
  await tdb?.drop();
});

test('a connection lost between two statements of a transaction fails the transaction, not the process; the pool then reconnects', async () => {
  const uncaught: Error[] = [];
  const record = (err: Error) => uncaught.push(err);
  process.on('uncaughtException', record);
  try {
    await assert.rejects(
      db.transaction().execute(async (tx) => {
        const { pid } = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(tx)).rows[0]!;
        proxy.cut();
        // The server side is gone once its backend has left; the client has seen its socket close by then.
        await waitFor('the backend to go', async () => {
          const r = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where pid = ${pid}`.execute(tdb.db);
          return r.rows[0]!.n === 0 ? true : undefined;
        });
        await new Promise((resolve) => setImmediate(resolve));
        await sql`select 1`.execute(tx);
      }),
    );
    assert.deepEqual(
      uncaught.map((e) => e.message),
      [],
      'no uncaught error',
    );
  } finally {
    process.off('uncaughtException', record);
  }
  proxy.restore();
  const r = await sql<{ one: number }>`select 1 as one`.execute(db);
  assert.equal(r.rows[0]!.one, 1);
});
