// TLS to Postgres is configured in DATABASE_URL (sslmode, sslrootcert, sslcert, sslkey): a file the
// URL names that cannot be read stops the process when its pool is made, naming the parameter and
// the path and never the URL (which may hold a password), instead of failing every later query.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDb } from '../../db/index.js';

test('a CA file DATABASE_URL names that cannot be read is refused at pool creation, naming the file', () => {
  const url = 'postgres://app:hunter2-password@127.0.0.1:1/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem';
  assert.throws(
    () => createDb(url),
    (err: Error) => {
      assert.match(err.message, /DATABASE_URL's sslrootcert file \/nonexistent\/ca\.pem cannot be read \(ENOENT\)/);
      assert.ok(!err.message.includes('hunter2'), 'no password in the message');
      return true;
    },
  );
  assert.throws(() => createDb('postgres://app@127.0.0.1:1/db?sslmode=verify-full&sslcert=/nonexistent/c.pem&sslkey=/nonexistent/c.key'), /sslcert file/);
});

test('readable files pass (no connection is made until a query)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'db-tls-'));
  try {
    await writeFile(join(dir, 'ca.pem'), 'not parsed here');
    const db = createDb(`postgres://app@127.0.0.1:1/db?sslmode=verify-full&sslrootcert=${join(dir, 'ca.pem')}`);
    await db.destroy();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
