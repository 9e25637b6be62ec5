// Provisioning reuse: with DATABASE_URL, TEMPORAL_ADDRESS and S3_* set (as `npm test` sets them),
// `scripts/stack.sh up` checks each service, prints the same values back and starts nothing.
// A variable that points at nothing fails fast, naming the variable.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireStackEnv } from '../support/stack.js';
import { parseExports, runStackScript } from '../support/profile-stack.js';
import { randomToken } from '../../shared/ids.js';

const stack = (args: string[], env: NodeJS.ProcessEnv) => runStackScript(args, env, 180_000);

describe('scripts/stack.sh reuses services named by the variables', () => {
  let home: string;
  const profile = `reuse-${randomToken(6)}`;

  before(async () => {
    requireStackEnv();
    // Its own state directory: anything the script started would show up here.
    home = await mkdtemp(join(tmpdir(), 'stack-reuse-'));
  });
  after(async () => {
    if (home) await rm(home, { recursive: true, force: true });
  });

  test('up with every variable set prints the same values back and starts no server', async () => {
    const env = { ...process.env, MEDIA_GEN_HOME: home };
    const r = await stack(['up', profile], env);
    assert.equal(r.code, 0, r.stderr);
    const vars = parseExports(r.stdout);
    for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'S3_ENDPOINT', 'S3_ACCESS_KEY', 'S3_SECRET_KEY', 'S3_BUCKET']) {
      assert.equal(vars[name], process.env[name], `${name} is passed through`);
    }
    assert.match(r.stderr, /postgres: reusing DATABASE_URL/);
    assert.match(r.stderr, /temporal: reusing TEMPORAL_ADDRESS/);
    assert.match(r.stderr, /minio: reusing S3_ENDPOINT/);
    assert.doesNotMatch(r.stderr, /started on port/);
    // Nothing was started: no pid files, ports, data directories or logs in the profile's state.
    const state = (await readdir(join(home, profile))).filter((f) => f !== '.lock').sort();
    assert.deepEqual(state, ['stack.env']);

    // down for that profile has nothing of its own to stop, and leaves the shared services alone.
    const down = await stack(['down', profile], env);
    assert.equal(down.code, 0, down.stderr);
    const again = await stack(['up', profile], env);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(parseExports(again.stdout).DATABASE_URL, process.env.DATABASE_URL);
  });

  test('a variable that points at nothing fails, naming the variable, and starts nothing', async () => {
    const env = { ...process.env, MEDIA_GEN_HOME: home, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' };
    const r = await stack(['up', `${profile}-bad`], env);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /DATABASE_URL is set but PostgreSQL does not answer/);
    assert.equal(r.stdout, '');
    const state = await readdir(join(home, `${profile}-bad`));
    assert.ok(!state.some((f) => f.endsWith('.pid') || f.endsWith('.port')), `nothing started: ${state.join(', ')}`);

    const noKeys = { ...process.env, MEDIA_GEN_HOME: home, S3_ACCESS_KEY: '' };
    const r2 = await stack(['up', `${profile}-bad`], noKeys);
    assert.notEqual(r2.code, 0);
    assert.match(r2.stderr, /S3_ENDPOINT is set but S3_ACCESS_KEY \/ S3_SECRET_KEY are not/);
  });
});
