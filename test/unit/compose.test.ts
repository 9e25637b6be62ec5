// docker-compose.yml cannot run here (no Docker engine), so this keeps it honest: it parses, the
// gateways and workers get only variables the config module reads, the required ones are set, the
// environment (with compose's defaults interpolated) passes the config module's own validation,
// the wiring (dependencies, health checks, schemas, search attributes, bucket) is complete, and it
// runs the same topology as the prod profile of scripts/stack.sh: the same processes, roles,
// variable names and pinned Temporal versions.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { configVariables, loadConfig } from '../../shared/config.js';

const composePath = fileURLToPath(new URL('../../../docker-compose.yml', import.meta.url));
const processesPath = fileURLToPath(new URL('../../../scripts/prod/processes', import.meta.url));
const stackProdPath = fileURLToPath(new URL('../../../scripts/stack-prod.sh', import.meta.url));

interface Service {
  image?: string;
  build?: unknown;
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: Record<string, { condition: string }> | string[];
  healthcheck?: { test: string[] | string };
  command?: string[] | string;
  entrypoint?: string[] | string;
  ports?: string[];
}

const compose = parse(readFileSync(composePath, 'utf8'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;

/** The prod profile's processes (scripts/prod/processes): name, command and worker roles. */
const processes = readFileSync(processesPath, 'utf8')
  .split('\n')
  .filter((l) => l.trim() && !l.startsWith('#'))
  .map((l) => {
    const [name, command, roles] = l.trim().split(/\s+/);
    return { name: name!, command: command as 'gateway' | 'worker', roles: roles ?? '' };
  });
const appServices = processes.map((p) => p.name);
const gateways = processes.filter((p) => p.command === 'gateway').map((p) => p.name);

/** The variable names scripts/stack-prod.sh gives its gateway and worker processes (env -i lists). */
function prodProfileVariables(): { gateway: string[]; worker: string[] } {
  const script = readFileSync(stackProdPath, 'utf8');
  const names = (text: string) => [...text.matchAll(/\b([A-Z][A-Z0-9_]*)=/g)].map((m) => m[1]!).filter((n) => n !== 'PATH' && n !== 'HOME');
  const common = names(/local common=\(([\s\S]*?)\)\n/.exec(script)![1]!);
  // Each launch: `env -i "${common[@]}" NAME=… \ … setsid node <entry>`.
  const launches = script.split('env -i "${common[@]}"').slice(1).map((part) => /^([\s\S]*?)setsid node (\S+ )*"\$app\/dist\/(\S+)"/.exec(part));
  const launch = (entry: string) => names(launches.find((m) => m?.[3] === entry)![1]!);
  // Workers: `start_worker DIR NAME "${worker_env[@]}"`, which runs `env -i "$@" NAME=… \ … setsid node`.
  const workerEnv = names(/local worker_env=\(([\s\S]*?)\)\n/.exec(script)![1]!);
  const startWorker = names(/start_worker\(\) \{[\s\S]*?env -i "\$@" ([\s\S]*?)setsid node/.exec(script)![1]!);
  return { gateway: [...common, ...launch('api/server.js')], worker: [...common, ...workerEnv, ...startWorker] };
}

/** A pinned version in scripts/stack-prod.sh (`NAME=v1.2.3`), without the v. */
function stackProdVersion(name: string): string {
  return new RegExp(`^${name}=v([0-9.]+)`, 'm').exec(readFileSync(stackProdPath, 'utf8'))![1]!;
}
const required = ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'S3_ENDPOINT', 'S3_ACCESS_KEY', 'S3_SECRET_KEY'];

function env(service: Service): Record<string, string> {
  const e = service.environment ?? {};
  const entries = Array.isArray(e) ? e.map((kv) => kv.split(/=(.*)/s).slice(0, 2) as [string, string]) : Object.entries(e).map(([k, v]) => [k, v === null ? '' : String(v)] as [string, string]);
  return Object.fromEntries(entries);
}

/**
 * Compose interpolation of ${VAR:-default} / ${VAR-default} / ${VAR}, and of required ${VAR:?message}
 * as if the operator set VAR to `set-<VAR>`; nothing else is set in the shell.
 */
function interpolate(value: string): string {
  return value
    .replace(/\$\{([A-Z0-9_]+):\?[^}]*\}/g, (_m, name: string) => `set-${name}`)
    .replace(/\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}/g, (_m, _name: string, dflt?: string) => dflt ?? '')
    .replace(/\$\$/g, '$');
}

/** The variable a value requires with ${VAR:?…}, if any. */
function requiredVar(value: string | undefined): string | undefined {
  return /\$\{([A-Z0-9_]+):\?[^}]*\}/.exec(value ?? '')?.[1];
}

function text(v: string[] | string | undefined): string {
  return Array.isArray(v) ? v.join(' ') : (v ?? '');
}

describe('docker-compose.yml', () => {
  test('has every part: postgres, temporal (+ schema step, UI, namespace and search attributes), minio (+ bucket), gateways and workers', () => {
    for (const name of ['postgres', 'db-roles', 'temporal-schema', 'temporal', 'temporal-ui', 'temporal-setup', 'minio', 'minio-bucket', 'migrate', ...appServices]) {
      assert.ok(services[name], `service ${name}`);
    }
    assert.match(services.temporal!.image ?? '', /^temporalio\/server:\d/);
    assert.ok(!Object.values(services).some((s) => /auto-setup/.test(s.image ?? '')), 'not the deprecated auto-setup image');
    assert.match(services['temporal-ui']!.image ?? '', /^temporalio\/ui:\d/);
    assert.match(services['temporal-schema']!.image ?? '', /^temporalio\/admin-tools:\d/);
    assert.match(services['temporal-setup']!.image ?? '', /^temporalio\/admin-tools:\d/);
    assert.match(services.minio!.image ?? '', /^minio\/minio:RELEASE\./);
    assert.match(services['minio-bucket']!.image ?? '', /^minio\/mc:RELEASE\./);
    assert.equal(env(services.temporal!).DB, 'postgres12', 'Temporal persists in Postgres');
    for (const s of appServices) assert.ok(services[s]!.build, `${s} is built from the repository`);
  });

  for (const s of appServices) {
    test(`${s}: every variable is one the config module reads, and the required ones are set`, () => {
      const vars = env(services[s]!);
      const unknown = Object.keys(vars).filter((k) => !configVariables.includes(k));
      assert.deepEqual(unknown, [], `${s} sets variables shared/config.ts does not read`);
      for (const r of required) assert.ok(vars[r] && interpolate(vars[r]!) !== '', `${s} sets ${r}`);
    });

    test(`${s}: its environment passes the config module's validation`, () => {
      const vars = Object.fromEntries(Object.entries(env(services[s]!)).map(([k, v]) => [k, interpolate(v)]));
      const config = loadConfig(vars);
      assert.equal(new URL(config.S3_ENDPOINT).host, 'minio:9000');
      assert.equal(new URL(config.DATABASE_URL).host, 'postgres:5432');
      assert.equal(config.TEMPORAL_ADDRESS, 'temporal:7233');
    });
  }

  test('the gateways, workers and one-shots share one set of service addresses and credentials', () => {
    const api = env(services[gateways[0]!]!);
    for (const s of appServices) for (const k of required) assert.equal(env(services[s]!)[k], api[k], `${s} ${k}`);
    const roles = env(services['db-roles']!);
    const db = new URL(interpolate(api.DATABASE_URL!));
    assert.equal(db.host, 'postgres:5432');
    assert.equal(db.pathname, '/mediagen');
    assert.equal(decodeURIComponent(db.password), interpolate(roles.APP_PASSWORD!), 'the app role has the password db-roles gives it');
    const setup = env(services['minio-bucket']!);
    assert.equal(api.S3_ACCESS_KEY, setup.MEDIAGEN_S3_ACCESS_KEY, 'the service uses the user the setup step creates');
    assert.equal(api.S3_SECRET_KEY, setup.MEDIAGEN_S3_SECRET_KEY);
    assert.match(text(services['minio-bucket']!.command), new RegExp(`mc mb --ignore-existing local/${api.S3_BUCKET}\\b`));
    const t = env(services.temporal!);
    assert.equal(t.POSTGRES_SEEDS, 'postgres');
    assert.equal(t.POSTGRES_USER, 'temporal');
    assert.equal(interpolate(t.POSTGRES_PWD!), interpolate(roles.TEMPORAL_PASSWORD!));
    const schema = env(services['temporal-schema']!);
    assert.equal(schema.SQL_HOST, 'postgres');
    assert.equal(schema.SQL_USER, 'temporal');
    assert.equal(interpolate(schema.SQL_PASSWORD!), interpolate(roles.TEMPORAL_PASSWORD!));
  });

  test('Temporal persists in Postgres, with its schemas set up by temporal-sql-tool before the server starts', () => {
    const t = env(services.temporal!);
    assert.equal(t.DB, 'postgres12');
    assert.equal(env(services['temporal-schema']!).SQL_PLUGIN, 'postgres12');
    const cmd = interpolate(text(services['temporal-schema']!.command));
    assert.match(cmd, /for db in temporal temporal_visibility/);
    for (const step of ['setup-schema -v 0.0', 'update-schema -d "/etc/temporal/schema/postgresql/v12/$dir/versioned"']) {
      assert.ok(cmd.includes(`temporal-sql-tool --db "$db" ${step}`), step);
    }
    // Its databases are created (owned by its own role) by db-roles, which the schema step waits for.
    const roles = interpolate(text(services['db-roles']!.command));
    for (const db of ['temporal', 'temporal_visibility']) assert.match(roles, new RegExp(`create database ${db} owner temporal\\b`));
    assert.deepEqual(services['temporal-schema']!.depends_on, { 'db-roles': { condition: 'service_completed_successfully' } });
    assert.deepEqual(services.temporal!.depends_on, { 'temporal-schema': { condition: 'service_completed_successfully' } });
  });

  test('the same Temporal server and UI versions as the prod profile builds', () => {
    const server = stackProdVersion('TEMPORAL_SERVER_VERSION');
    assert.equal(services.temporal!.image, `temporalio/server:${server}`);
    assert.equal(services['temporal-schema']!.image, `temporalio/admin-tools:${server}`);
    assert.equal(services['temporal-setup']!.image, `temporalio/admin-tools:${server}`);
    assert.equal(services['temporal-ui']!.image, `temporalio/ui:${stackProdVersion('TEMPORAL_UI_VERSION')}`);
  });

  test('the prod profile\'s processes: one service each, same command, roles and variable names', () => {
    const vars = prodProfileVariables();
    for (const p of processes) {
      const svc = services[p.name]!;
      const e = env(svc);
      if (p.command === 'gateway') {
        assert.match(text(svc.command), /^node dist\/api\/server\.js$/, p.name);
        assert.equal(e.WORKER_ROLES, undefined, `${p.name} runs no worker`);
      } else {
        assert.match(text(svc.command), /^node dist\/worker\/main\.js$/, p.name);
        assert.equal(e.WORKER_ROLES, p.roles, `${p.name} runs the roles ${p.roles}`);
      }
      const missing = vars[p.command].filter((name) => !(name in e));
      assert.deepEqual(missing, [], `${p.name} sets every variable the prod profile sets`);
    }
    // Nothing else runs the service's code but the one-shot migrate step.
    const others = Object.entries(services).filter(([name, s]) => s.build && name !== 'migrate' && !appServices.includes(name));
    assert.deepEqual(others.map(([name]) => name), []);
    assert.deepEqual(processes.filter((p) => p.command === 'worker').map((p) => p.roles).sort(), ['fetch', 'provider:fal', 'provider:local', 'provider:local', 'provider:xai', 'webhooks', 'workflows,io,reconciler']);
    assert.equal(gateways.length, 2);
  });

  test('the Temporal server has the history shard count of the prod profile, and no dev server switch', () => {
    const serverYaml = readFileSync(fileURLToPath(new URL('../../../scripts/prod/temporal-server.yaml', import.meta.url)), 'utf8');
    const shards = Number(/^\s*numHistoryShards:\s*(\d+)\s*$/m.exec(serverYaml)?.[1]);
    assert.ok(shards >= 512, `numHistoryShards ${shards}: fixed at creation, so sized for growth`);
    assert.equal(Number(env(services.temporal!).NUM_HISTORY_SHARDS), shards);
    const dynamic = readFileSync(fileURLToPath(new URL('../../../scripts/prod/temporal-dynamicconfig.yaml', import.meta.url)), 'utf8');
    assert.doesNotMatch(dynamic, /^system\.forceSearchAttributesCacheRefreshOnRead/m, 'a dev-server-only switch');
  });

  test('every worker polls as a version of one Worker Deployment, the build id from its build', () => {
    for (const p of processes.filter((x) => x.command === 'worker')) {
      const vars = Object.fromEntries(Object.entries(env(services[p.name]!)).map(([k, v]) => [k, interpolate(v)]));
      assert.equal(vars.WORKER_DEPLOYMENT_NAME, 'mediagen', p.name);
      assert.equal(vars.WORKER_BUILD_ID, '', `${p.name}: unset, the image's dist/build-id`);
      assert.equal(loadConfig(vars).WORKER_DEPLOYMENT_PROMOTE, 'newer', p.name);
    }
    for (const g of gateways) assert.equal(env(services[g]!).WORKER_DEPLOYMENT_NAME, undefined, `${g} polls nothing`);
  });

  test('Temporal (frontend, Web UI) and MinIO (API, console) are published on 127.0.0.1 only', () => {
    for (const name of ['temporal', 'temporal-ui', 'minio']) {
      const ports = services[name]!.ports ?? [];
      assert.ok(ports.length > 0, `${name} publishes its ports`);
      for (const p of ports) assert.match(p, /^127\.0\.0\.1:\d+:\d+$/, `${name} publishes ${p}`);
    }
  });

  test('every password is required (${VAR:?}), never a default', () => {
    const api = env(services[gateways[0]!]!);
    const secrets: Array<[string, string | undefined]> = [
      ['api DATABASE_URL', api.DATABASE_URL],
      ['api S3_SECRET_KEY', api.S3_SECRET_KEY],
      ['api WEBHOOK_SECRETS_KEY', api.WEBHOOK_SECRETS_KEY],
      ['migrate DATABASE_URL', env(services.migrate!).DATABASE_URL],
      ['postgres POSTGRES_PASSWORD', env(services.postgres!).POSTGRES_PASSWORD],
      ['db-roles PGPASSWORD', env(services['db-roles']!).PGPASSWORD],
      ['db-roles MIGRATE_PASSWORD', env(services['db-roles']!).MIGRATE_PASSWORD],
      ['db-roles APP_PASSWORD', env(services['db-roles']!).APP_PASSWORD],
      ['db-roles TEMPORAL_PASSWORD', env(services['db-roles']!).TEMPORAL_PASSWORD],
      ['temporal POSTGRES_PWD', env(services.temporal!).POSTGRES_PWD],
      ['temporal-schema SQL_PASSWORD', env(services['temporal-schema']!).SQL_PASSWORD],
      ['minio MINIO_ROOT_PASSWORD', env(services.minio!).MINIO_ROOT_PASSWORD],
      ['minio-bucket MINIO_ROOT_PASSWORD', env(services['minio-bucket']!).MINIO_ROOT_PASSWORD],
    ];
    for (const [what, value] of secrets) assert.ok(requiredVar(value), `${what} must be \${VAR:?…}, is ${value}`);
    assert.equal(requiredVar(api.DATABASE_URL), 'MEDIAGEN_APP_DB_PASSWORD');
  });

  test('the service uses a MinIO user limited to its bucket, not the root user', () => {
    const api = env(services[gateways[0]!]!);
    const minio = env(services.minio!);
    assert.notEqual(interpolate(api.S3_ACCESS_KEY!), interpolate(minio.MINIO_ROOT_USER!));
    const cmd = interpolate(text(services['minio-bucket']!.command));
    const policy = JSON.parse(/<<'POLICY'\n([\s\S]*?)\n\s*POLICY/.exec(cmd)![1]!) as { Statement: Array<{ Effect: string; Resource: string[] }> };
    const bucket = api.S3_BUCKET!;
    for (const st of policy.Statement) {
      assert.equal(st.Effect, 'Allow');
      for (const r of st.Resource) assert.ok(r === `arn:aws:s3:::${bucket}` || r === `arn:aws:s3:::${bucket}/*`, `policy resource ${r} is outside the bucket`);
    }
    assert.match(cmd, /mc admin policy create local media-bucket-only /);
    assert.match(cmd, /mc admin user add local "\$MEDIAGEN_S3_ACCESS_KEY" "\$MEDIAGEN_S3_SECRET_KEY"/);
    assert.match(cmd, /mc admin policy attach local media-bucket-only --user "\$MEDIAGEN_S3_ACCESS_KEY"/);
  });

  test('registers the default namespace and our five search attributes as Keyword', () => {
    const cmd = text(services['temporal-setup']!.command);
    assert.match(cmd, /temporal operator namespace create --namespace default/);
    for (const name of ['WorkspaceId', 'ProjectId', 'JobKind', 'MediaModel', 'JobStatus', 'ServingProvider']) assert.match(cmd, new RegExp(`\\b${name}\\b`));
    assert.match(cmd, /search-attribute create .*--type Keyword/);
  });

  test('health checks on the servers, and depends_on waits for them', () => {
    for (const name of ['postgres', 'temporal', 'minio', ...gateways]) assert.ok(services[name]!.healthcheck?.test, `${name} has a health check`);
    for (const [name, svc] of Object.entries(services)) {
      const deps = svc.depends_on ?? {};
      assert.ok(!Array.isArray(deps), `${name}: depends_on uses conditions`);
      for (const [dep, { condition }] of Object.entries(deps)) {
        assert.ok(services[dep], `${name} depends on unknown service ${dep}`);
        assert.ok(['service_healthy', 'service_completed_successfully', 'service_started'].includes(condition));
        if (condition === 'service_healthy') assert.ok(services[dep]!.healthcheck, `${name} waits for ${dep} to be healthy, which has no health check`);
      }
    }
    const deps = (s: string) => Object.keys(services[s]!.depends_on as Record<string, unknown>);
    for (const s of appServices) {
      assert.ok(deps(s).includes('migrate'), `${s} waits for migrations`);
      assert.ok(deps(s).includes('temporal-setup'), `${s} waits for the namespace and search attributes`);
    }
    assert.ok(deps('migrate').includes('minio-bucket'));
  });

  test('the gateways listen on all interfaces inside their containers, published on ports of their own', () => {
    const published = new Set<string>();
    for (const g of gateways) {
      assert.equal(env(services[g]!).HOST, '0.0.0.0');
      for (const p of services[g]!.ports ?? []) published.add(p.split(':').at(-2)!);
    }
    assert.equal(published.size, gateways.length);
  });
  test('the gateway role is no superuser, has no DDL, and is not the migrate role', () => {
    const gatewayUser = new URL(interpolate(env(services[gateways[0]!]!).DATABASE_URL!)).username;
    const migrateUser = new URL(interpolate(env(services.migrate!).DATABASE_URL!)).username;
    const temporalUser = env(services.temporal!).POSTGRES_USER;
    const superuser = env(services.postgres!).POSTGRES_USER;
    assert.notEqual(gatewayUser, migrateUser, 'the gateways do not connect as the schema owner');
    assert.equal(new Set([gatewayUser, migrateUser, temporalUser, superuser]).size, 4, 'app, migrations, Temporal and the superuser: four roles');
    for (const s of appServices) assert.equal(new URL(interpolate(env(services[s]!).DATABASE_URL!)).username, gatewayUser, `${s} connects as the app role`);
    const sqlText = interpolate(text(services['db-roles']!.command));
    // Created without any power beyond logging in...
    const created = new RegExp(`create role ${gatewayUser} login nosuperuser nocreatedb nocreaterole noreplication nobypassrls'`).test(sqlText);
    assert.ok(created, `${gatewayUser} is created login nosuperuser nocreatedb nocreaterole noreplication nobypassrls`);
    // ...owning nothing (the databases belong to the migrate and Temporal roles), with no CREATE on
    // the schema for anyone but its owner, and no grant but CONNECT and USAGE here.
    assert.doesNotMatch(sqlText, new RegExp(`owner ${gatewayUser}\\b`));
    assert.match(sqlText, /revoke create on schema public from public;/);
    const grants = [...sqlText.matchAll(/^grant (.+) to (.+);$/gm)].filter((m) => m[2]!.split(/,\s*/).includes(gatewayUser)).map((m) => m[1]);
    assert.deepEqual(grants, ['connect on database mediagen', 'usage on schema public']);
    assert.match(sqlText, new RegExp(`create database mediagen owner ${migrateUser}\\b`));
    // Its table privileges are the DML of db/roles.ts, granted by the schema owner after migrating.
    assert.match(text(services.migrate!.command), new RegExp(`admin\\.js migrate --app-role ${gatewayUser}\\b`));
    const app = Object.fromEntries(Object.entries(env(services[gateways[0]!]!)).map(([k, v]) => [k, interpolate(v)]));
    assert.equal(loadConfig(app).NODE_ENV, 'production');
  });

  test('production needs its own webhook secrets key, and presigned URLs are signed for a host outside clients reach', () => {
    for (const s of appServices) {
      const e = env(services[s]!);
      assert.equal(requiredVar(e.WEBHOOK_SECRETS_KEY), 'MEDIAGEN_WEBHOOK_SECRETS_KEY', `${s} WEBHOOK_SECRETS_KEY`);
      const presign = new URL(interpolate(e.S3_PRESIGN_ENDPOINT!));
      assert.notEqual(presign.hostname, 'minio', `${s}: the compose-internal host name is not reachable from outside`);
    }
    const vars = Object.fromEntries(Object.entries(env(services[gateways[0]!]!)).map(([k, v]) => [k, interpolate(v)]));
    assert.throws(() => loadConfig({ ...vars, WEBHOOK_SECRETS_KEY: '' }), /WEBHOOK_SECRETS_KEY: required when NODE_ENV=production/);
  });
});
