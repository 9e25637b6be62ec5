// The prod profile's Postgres is durable (fsync, synchronous_commit and full_page_writes on, as a
// production database is): stopped as if it crashed (`pg_ctl stop -m immediate`: no checkpoint, no
// flush) while 20 jobs complete, then started again by the profile's own `stack.sh up prod` (on the
// same port, so every running gateway, worker and the Temporal server reconnect), every job ends
// completed with its outputs, charged exactly once, and Postgres and Temporal agree on each. The
// jobs' provider is the local fake fal queue (the profile's overrides), held IN_PROGRESS until the
// suite lets them complete right before the crash, so completions are in flight when it comes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { createDb, type Database } from '../../db/index.js';
import { createTenant, waitFor } from '../support/stack.js';
import { api, creditsOf } from '../support/services.js';
import { openProfileSuite, type ProfileSuite } from '../support/profile-stack.js';
import { jobRow } from '../support/job-helpers.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { ledgerForJob } from '../support/ledger.js';
import { randomToken } from '../../shared/ids.js';

const JOBS = 20;

let suite: ProfileSuite;
let stack: ProfileSuite['stack'];
let db: Database;
let temporal: Client;
let live: LiveFal;
const up = () => suite.up();

/** Runs a PostgreSQL server binary on the profile's cluster as its owner (`postgres` when we are root). */
function pgCtl(args: string[]): Promise<string> {
  const bin = `/usr/lib/postgresql/${readdirSync('/usr/lib/postgresql')
    .sort((a, b) => Number(a) - Number(b))
    .at(-1)}/bin/pg_ctl`;
  const [cmd, argv] = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  return new Promise((resolve, reject) =>
    execFile(cmd, argv as string[], { timeout: 120_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout))),
  );
}

before(
  async () => {
    live = await startLiveFal();
    suite = await openProfileSuite('prod', { overrides: { ...live.env, NODE_ENV: 'test' } });
    ({ stack, db, temporal } = suite);
  },
  { timeout: 4_200_000 },
);

after(
  async () => {
    await suite?.close();
    // The test replaces the suite's pool after the crash: that one is closed here.
    await db?.destroy();
    await live?.close();
  },
  { timeout: 600_000 },
);

test('the profile runs Postgres durable: fsync, synchronous_commit and full_page_writes on', async () => {
  for (const setting of ['fsync', 'synchronous_commit', 'full_page_writes']) {
    const r = await db.selectNoFrom((eb) => eb.fn<string>('current_setting', [eb.val(setting)]).as('v')).executeTakeFirstOrThrow();
    assert.equal(r.v, 'on', setting);
  }
});

test(
  `Postgres stopped with pg_ctl -m immediate while ${JOBS} jobs complete, then started by up prod: all complete, credits exact, Temporal agrees`,
  { timeout: 1_200_000 },
  async () => {
    const t = await createTenant(db, 10_000);
    const marker = randomToken(6);
    live.fal.flow = ['IN_PROGRESS'];
    const ids: string[] = [];
    for (let i = 0; i < JOBS; i++) {
      const r = await api(stack.gateways[i % 2]!, t.apiKey).post('/v1/images/generate', {
        project_id: t.projectId,
        prompt: `crash ${marker} ${i}`,
        model: 'nano-banana-2',
        aspect_ratio: '1:1',
        count: 1,
      });
      assert.equal(r.status, 200, r.text);
      ids.push(r.body.data.id as string);
    }
    await waitFor(
      `every job to be submitted to fal`,
      () => [...live.fal.states.values()].filter((s) => String(s.input.prompt).includes(`crash ${marker} `)).length === JOBS,
      120_000,
      250,
    );

    // fal completes them all; the crash comes as soon as the first completion committed.
    live.fal.flow = ['COMPLETED'];
    await waitFor(
      'a first job to complete',
      async () => (await db.selectFrom('jobs').select('id').where('id', 'in', ids).where('status', '=', 'completed').execute()).length > 0,
      120_000,
      20,
    );
    await db.destroy();
    await pgCtl(['stop', '-D', join(stack.stateDir, 'pg'), '-m', 'immediate']);

    // The profile's own command starts it again (same port), and reuses every other process.
    const restarted = await up();
    assert.match(restarted, /postgres: started/, restarted);
    db = createDb(stack.config.DATABASE_URL, 5);

    await waitFor(
      `${JOBS} jobs to finish`,
      async () => {
        const rows = await db.selectFrom('jobs').select('status').where('id', 'in', ids).execute();
        return rows.every((r) => r.status === 'completed' || r.status === 'failed');
      },
      600_000,
      1000,
    );
    let total = 0;
    for (const id of ids) {
      const row = await jobRow(db, id);
      assert.equal(row.status, 'completed', `${id}: ${JSON.stringify(row.error)}`);
      assert.ok(Array.isArray(row.outputs) && row.outputs.length > 0, `${id} has its outputs`);
      const net = (await ledgerForJob(db, id)).reduce((sum, e) => sum - e.delta, 0);
      assert.equal(net, row.price, `${id} is charged its price once`);
      total += row.price;
      const desc = await temporal.workflow.getHandle(id).describe();
      assert.equal(desc.status.name, 'COMPLETED', `${id}: its workflow completed`);
    }
    assert.equal(await creditsOf(db, t), 10_000 - total, 'the workspace paid every job once');
  },
);
