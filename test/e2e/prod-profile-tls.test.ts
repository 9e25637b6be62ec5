// The prod profile's PostgreSQL speaks TLS only (scripts/stack.sh up_postgres: ssl=on, a pg_hba that
// rejects plain TCP): every connection of the service (gateways and workers, each as its fleet's role) and of
// the Temporal server (its `temporal` and `temporal_visibility` databases) is encrypted, the service
// verifies the server against the profile's CA with sslmode=verify-full, a plain connection is
// refused, and a client trusting another CA refuses the server. The same processes' storage keys:
// their fleets' identities and the profile's own media prefix key, never the MinIO root secret.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { lockProfile, type ProfileStack } from '../support/profile-stack.js';
import { waitFor } from '../support/stack.js';

let stack: ProfileStack & { release(): void };

before(
  async () => {
    stack = await lockProfile('prod');
  },
  { timeout: 4_200_000 },
);

after(() => stack?.release());

/** The URL with its query replaced (same server, user and database). */
function withQuery(url: string, query: Record<string, string>, user?: { name: string; password: string }): string {
  const u = new URL(url);
  u.search = new URLSearchParams(query).toString();
  if (user) {
    u.username = user.name;
    u.password = user.password;
  }
  return u.toString();
}

async function query<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(text)).rows;
  } finally {
    await c.end();
  }
}

interface Conn {
  usename: string;
  datname: string;
  ssl: boolean;
  version: string | null;
}

test('every connection of the service and of the Temporal server is TLS, verified against the profile CA', async () => {
  const url = new URL(stack.vars.DATABASE_URL!);
  assert.equal(url.searchParams.get('sslmode'), 'verify-full');
  const ca = url.searchParams.get('sslrootcert')!;
  assert.equal(ca, join(stack.stateDir, 'certs', 'ca.pem'));
  // Each process as its fleets' database role and with its fleet's storage identity (db/fleet-roles.ts,
  // shared/storage-policies.ts): worker-core runs the workflows, io and reconciler roles.
  const fleets = {
    'gateway-1': ['mediagen_gateway', 'mediagen-gateway'],
    'worker-core': ['mediagen_workflows_reconciler', 'mediagen-reconciler'],
    'worker-local-1': ['mediagen_provider', 'mediagen-worker'],
  };
  for (const [name, [role, identity]] of Object.entries(fleets)) {
    const env = await stack.environment(name);
    const own = new URL(env.DATABASE_URL!);
    assert.equal(own.username, role, `${name} connects as its fleet's role`);
    assert.equal(env.S3_ACCESS_KEY, identity, `${name} uses its fleet's storage identity`);
    assert.equal(own.searchParams.get('sslmode'), 'verify-full', `${name} verifies the server`);
    assert.equal(own.searchParams.get('sslrootcert'), ca, `${name} trusts the profile CA`);
  }

  // The gateways' readiness reads Postgres: their pools hold a connection for a while after.
  const seen = await waitFor(
    "connections of the fleets' roles and of the Temporal server",
    async () => {
      await Promise.all(stack.gateways.map((g) => fetch(`${g}/readyz`).then((r) => r.arrayBuffer())));
      const rows = await query<Conn>(
        stack.vars.DATABASE_URL!,
        `select a.usename, a.datname, s.ssl, s.version from pg_stat_ssl s join pg_stat_activity a using (pid)
          where a.backend_type = 'client backend' and a.pid <> pg_backend_pid()`,
      );
      const app = rows.filter((r) => r.usename.startsWith('mediagen_'));
      const temporal = rows.filter((r) => r.datname === 'temporal' || r.datname === 'temporal_visibility');
      return app.length > 0 && temporal.some((r) => r.datname === 'temporal') && temporal.some((r) => r.datname === 'temporal_visibility') && rows;
    },
    60_000,
    500,
  );
  const plain = seen.filter((r) => !r.ssl);
  assert.deepEqual(plain, [], 'no connection without TLS');
  for (const r of seen) assert.match(r.version ?? '', /^TLSv1\.[23]$/, `${r.usename}@${r.datname}: a current TLS version`);
});

test("no service process holds the MinIO root secret: each has its fleet's keys and the profile's own media prefix key", async () => {
  const root = stack.vars.S3_SECRET_KEY!;
  assert.ok(root, 'the profile exports the root secret for suites');
  const prefixFile = join(stack.stateDir, 's3-media-prefix.secret');
  const prefixSecret = (await readFile(prefixFile, 'utf8')).trim();
  assert.equal(stack.vars.S3_MEDIA_PREFIX_SECRET, prefixSecret, 'the profile exports the key its processes use');
  assert.notEqual(prefixSecret, root);
  assert.equal((await stat(prefixFile)).mode & 0o777, 0o600, 'the key is readable by its owner only');
  const names = readFileSync(fileURLToPath(new URL('../../../scripts/prod/processes', import.meta.url)), 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'))
    .map((l) => l.trim().split(/\s+/)[0]!);
  for (const name of [...names, 'codec-server']) {
    const env = await stack.environment(name);
    const holding = Object.keys(env).filter((k) => env[k]!.includes(root));
    assert.deepEqual(holding, [], `${name}: no variable holds the root secret`);
    if (name === 'codec-server') continue;
    assert.equal(env.S3_MEDIA_PREFIX_SECRET, prefixSecret, `${name}: the profile's media prefix key`);
    assert.match(env.S3_ACCESS_KEY ?? '', /^mediagen-(gateway|worker|reconciler)$/, `${name}: a fleet's storage identity`);
  }
});

test('a connection without TLS is refused, for the owner and the app role alike', async () => {
  const password = (await readFile(join(stack.stateDir, 'app-db.password'), 'utf8')).trim();
  for (const user of [undefined, { name: 'mediagen_app', password }]) {
    await assert.rejects(
      query(withQuery(stack.vars.DATABASE_URL!, { sslmode: 'disable' }, user), 'select 1'),
      /pg_hba\.conf rejects connection .*no encryption/,
    );
  }
  // The same URL with TLS is accepted: the refusal above is the missing TLS, not the user.
  const [row] = await query<{ ssl: boolean }>(
    withQuery(stack.vars.DATABASE_URL!, { sslmode: 'verify-full', sslrootcert: join(stack.stateDir, 'certs', 'ca.pem') }, { name: 'mediagen_app', password }),
    'select ssl from pg_stat_ssl where pid = pg_backend_pid()',
  );
  assert.equal(row?.ssl, true);
});

test('a client that trusts another CA refuses the server', async () => {
  await assert.rejects(
    query(withQuery(stack.vars.DATABASE_URL!, { sslmode: 'verify-full', sslrootcert: join(stack.stateDir, 'certs', 'intruder-ca.pem') }), 'select 1'),
    (err: Error & { code?: string }) => {
      assert.match(`${err.code} ${err.message}`, /unable to (get|verify)|self[- ]signed|UNABLE_TO|SELF_SIGNED/i);
      return true;
    },
  );
});
