// Control-loop leases (worker/control-lease.ts) on the real Postgres: of several processes' lease
// managers one holds each loop; a holder that stops renewing (killed, stalled) is replaced within
// TTL + TTL/3 and its fenced writes fail from then on; a clean stop hands over at the next tick;
// a process that is not eligible (not the current build) gives its leases up.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { pino } from 'pino';
import { createTestDatabase, type TestDatabase } from '../support/stack.js';
import { assertLeaseHeld, createControlLeases, LeaseLostError, leaseHolders, type Lease, type LeasedLoop } from '../../worker/control-lease.js';

let tdb: TestDatabase;
const logger = pino({ level: 'silent' });
const TTL = 900;

before(async () => {
  tdb = await createTestDatabase();
});

after(async () => {
  await tdb?.drop();
});

/** A loop that records its tenures. */
function recorder() {
  const tenures: Lease[] = [];
  let running = 0;
  const loop: LeasedLoop = {
    start(l) {
      tenures.push(l);
      running++;
    },
    async stop() {
      running--;
    },
  };
  return { loop, tenures, running: () => running };
}

async function until<T>(what: string, fn: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function managers(deployment: string, n: number, eligible?: (i: number) => () => Promise<boolean>) {
  return Array.from({ length: n }, (_, i) => {
    const loops = { a: recorder(), b: recorder() };
    const m = createControlLeases({
      db: tdb.db,
      deployment,
      buildId: null,
      ttlMs: TTL,
      logger,
      holder: `p${i}`,
      ...(eligible ? { eligible: eligible(i) } : {}),
    });
    m.register('a', loops.a.loop);
    m.register('b', loops.b.loop);
    return { m, loops };
  });
}

describe('control leases', () => {
  test('one holder per loop across processes; others stay idle while it renews', async () => {
    const ps = managers('d1', 4);
    await Promise.all(ps.map((p) => p.m.tick()));
    for (let i = 0; i < 5; i++) await Promise.all(ps.map((p) => p.m.tick()));
    for (const loop of ['a', 'b'] as const) {
      const running = ps.filter((p) => p.loops[loop].running() > 0);
      assert.equal(running.length, 1, `one process runs ${loop}`);
      assert.equal(running[0]!.loops[loop].tenures.length, 1, 'renewals keep one tenure');
    }
    const holders = await leaseHolders(tdb.db, 'd1');
    assert.equal(holders.size, 2);
    await Promise.all(ps.map((p) => p.m.stop()));
  });

  test('a holder that stops renewing is replaced within TTL + TTL/3; its fenced writes fail from then on', async () => {
    const ps = managers('d2', 3);
    await ps[0]!.m.tick();
    const old = ps[0]!.m.held('a')!;
    assert.ok(old, 'p0 takes the lease first');
    await assertLeaseHeld(tdb.db, old);
    // p0 is "killed": it never ticks again. The others tick on their schedule.
    for (const p of ps.slice(1)) p.m.start();
    const lastRenewal = Date.now();
    const next = await until('another process to take a over', () =>
      ps
        .slice(1)
        .find((p) => p.m.held('a'))
        ?.m.held('a'),
    );
    const took = Date.now() - lastRenewal;
    assert.ok(took <= TTL + Math.ceil(TTL / 3) + 400, `taken over after ${took} ms`);
    assert.ok(took >= TTL - 50, `not before the lease expired (${took} ms)`);
    assert.ok(next.epoch > old.epoch, 'the take-over has a higher epoch');
    assert.equal(old.valid(), false, 'the old holder no longer counts itself the holder by its own clock');
    await assert.rejects(assertLeaseHeld(tdb.db, old), LeaseLostError);
    await assertLeaseHeld(tdb.db, next);
    // The stale process wakes up: its tick finds the row taken and stops its loop.
    await ps[0]!.m.tick();
    assert.equal(ps[0]!.m.held('a'), null);
    assert.equal(ps[0]!.loops.a.running(), 0);
    await Promise.all(ps.map((p) => p.m.stop()));
  });

  test('a fenced write in flight holds off the take-over; once taken over, the old tenure cannot write', async () => {
    const [p0, p1] = managers('d3', 2);
    await p0!.m.tick();
    const lease = p0!.m.held('a')!;
    await sql`create table if not exists fenced_writes (epoch bigint)`.execute(tdb.db);
    // p0's write transaction checks its lease, then waits past the expiry before committing.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const write = tdb.db.transaction().execute(async (trx) => {
      await assertLeaseHeld(trx, lease);
      await gate;
      await sql`insert into fenced_writes values (${lease.epoch})`.execute(trx);
    });
    await new Promise((r) => setTimeout(r, TTL + 100));
    // p1's take-over waits for the fenced transaction's share lock.
    const takeover = p1!.m.tick();
    const raced = await Promise.race([takeover.then(() => 'took'), new Promise((r) => setTimeout(() => r('waiting'), 300))]);
    assert.equal(raced, 'waiting', 'the take-over waits for the fenced write');
    release();
    await write;
    await takeover;
    const next = p1!.m.held('a')!;
    assert.ok(next && next.epoch > lease.epoch);
    await assert.rejects(
      tdb.db.transaction().execute(async (trx) => {
        await assertLeaseHeld(trx, lease);
        await sql`insert into fenced_writes values (${lease.epoch})`.execute(trx);
      }),
      LeaseLostError,
    );
    const rows = await sql<{ n: number }>`select count(*)::int as n from fenced_writes`.execute(tdb.db);
    assert.equal(rows.rows[0]!.n, 1, 'only the write that started under the lease committed');
    await Promise.all([p0!.m.stop(), p1!.m.stop()]);
  });

  test('a clean stop releases at once: another process holds every loop at its next tick', async () => {
    const [p0, p1] = managers('d4', 2);
    await p0!.m.tick();
    await p1!.m.tick();
    assert.ok(p0!.m.held('a') && p0!.m.held('b'));
    assert.equal(p1!.m.held('a'), null);
    await p0!.m.stop();
    assert.equal(p0!.loops.a.running(), 0);
    await p1!.m.tick();
    assert.ok(p1!.m.held('a') && p1!.m.held('b'), 'taken without waiting for the expiry');
    await p1!.m.stop();
  });

  test('a process that may not hold leases (not the current build) gives them up, and never takes a free one', async () => {
    let oldIsCurrent = true;
    const [oldBuild, newBuild] = managers('d5', 2, (i) => async () => (i === 0 ? oldIsCurrent : !oldIsCurrent));
    await oldBuild!.m.tick();
    await newBuild!.m.tick();
    assert.ok(oldBuild!.m.held('a'));
    assert.equal(newBuild!.m.held('a'), null);
    oldIsCurrent = false;
    await oldBuild!.m.tick();
    assert.equal(oldBuild!.m.held('a'), null);
    assert.equal(oldBuild!.loops.a.running(), 0);
    await newBuild!.m.tick();
    assert.ok(newBuild!.m.held('a') && newBuild!.m.held('b'));
    // The old build competes again after the new one stops: it stays off.
    await newBuild!.m.stop();
    await oldBuild!.m.tick();
    assert.equal(oldBuild!.m.held('a'), null);
    await oldBuild!.m.stop();
  });
});
