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
import express from 'express';
import { configVariables, loadConfig } from '../../shared/config.js';
import { missingRoleSecrets, roleScopedSecrets, routeMode, runsMediaTools, secretsOfRoles } from '../../shared/routing.js';
import { fleetOfWorkerRole, fleets } from '../../db/fleet-roles.js';
import { storageIdentities, storageIdentityOfRoles, storagePolicy, type StorageIdentity } from '../../shared/storage-policies.js';
import { identityUser, secretVariable } from '../../scripts/minio-identities.js';

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
  user?: string;
  cap_add?: string[];
  cap_drop?: string[];
  security_opt?: string[];
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
  const launches = script
    .split('env -i "${common[@]}"')
    .slice(1)
    .map((part) => /^([\s\S]*?)setsid node (\S+ )*"\$app\/dist\/(\S+)"/.exec(part));
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

/** The fleets a process runs (db/fleet-roles.ts): the gateway's, or those of its worker roles. */
function fleetsOf(p: { command: 'gateway' | 'worker'; roles: string }): string[] {
  if (p.command === 'gateway') return ['gateway'];
  const kinds = p.roles.split(',').map((r) => r.split(':')[0] as Parameters<typeof fleetOfWorkerRole>[0]);
  return [...new Set(kinds.map(fleetOfWorkerRole))];
}
/** The database role a process logs in as: its fleet's, or one that is a member of each of its fleets' (as the prod profile names it). */
const loginOf = (p: { command: 'gateway' | 'worker'; roles: string }) => `mediagen_${fleetsOf(p).join('_')}`;
/** The storage identity a process uses (shared/storage-policies.ts). */
const identityOf = (p: { command: 'gateway' | 'worker'; roles: string }): StorageIdentity =>
  p.command === 'gateway' ? 'gateway' : storageIdentityOfRoles(p.roles.split(','));

function env(service: Service): Record<string, string> {
  const e = service.environment ?? {};
  const entries = Array.isArray(e)
    ? e.map((kv) => kv.split(/=(.*)/s).slice(0, 2) as [string, string])
    : Object.entries(e).map(([k, v]) => [k, v === null ? '' : String(v)] as [string, string]);
  return Object.fromEntries(entries);
}

/**
 * Compose interpolation of ${VAR:-default} / ${VAR-default} / ${VAR} / ${VAR:+replacement}, and of
 * required ${VAR:?message} as if the operator set VAR to `set-<VAR>`; nothing else is set in the
 * shell but `shell`.
 */
function interpolate(value: string, shell: Record<string, string> = {}): string {
  return value
    .replace(/\$\{([A-Z0-9_]+):\?[^}]*\}/g, (_m, name: string) => `set-${name}`)
    .replace(/\$\{([A-Z0-9_]+):\+([^}]*)\}/g, (_m, name: string, word: string) => (shell[name] ? word : ''))
    .replace(/\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}/g, (_m, name: string, dflt?: string) => shell[name] || (dflt ?? ''))
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
    for (const name of [
      'postgres',
      'db-roles',
      'temporal-schema',
      'temporal',
      'temporal-ui',
      'temporal-setup',
      'minio',
      'minio-bucket',
      'minio-identities',
      'migrate',
      'seed',
      ...appServices,
    ]) {
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

  test('the gateways, workers and one-shots share one set of service addresses, one database and one media prefix key', () => {
    const api = env(services[gateways[0]!]!);
    for (const s of [...appServices, 'migrate', 'seed'])
      for (const k of ['TEMPORAL_ADDRESS', 'S3_ENDPOINT', 'S3_BUCKET', 'S3_MEDIA_PREFIX_SECRET']) assert.equal(env(services[s]!)[k], api[k], `${s} ${k}`);
    assert.equal(requiredVar(api.S3_MEDIA_PREFIX_SECRET), 'MEDIAGEN_S3_MEDIA_PREFIX_SECRET', 'every identity keys the media prefixes alike');
    for (const s of [...appServices, 'migrate', 'seed']) {
      const db = new URL(interpolate(env(services[s]!).DATABASE_URL!));
      assert.equal(db.host, 'postgres:5432', s);
      assert.equal(db.pathname, '/mediagen', s);
    }
    const roles = env(services['db-roles']!);
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

  test("the prod profile's processes: one service each, same command, roles and variable names", () => {
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
    assert.deepEqual(
      others.map(([name]) => name),
      [],
    );
    assert.deepEqual(
      processes
        .filter((p) => p.command === 'worker')
        .map((p) => p.roles)
        .sort(),
      ['fetch', 'provider:fal', 'provider:local', 'provider:local', 'provider:xai', 'webhooks', 'workflows,io,reconciler'],
    );
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
      ...processes.flatMap((p): Array<[string, string | undefined]> => [
        [`${p.name} DATABASE_URL`, env(services[p.name]!).DATABASE_URL],
        [`${p.name} S3_SECRET_KEY`, env(services[p.name]!).S3_SECRET_KEY],
        [`${p.name} S3_MEDIA_PREFIX_SECRET`, env(services[p.name]!).S3_MEDIA_PREFIX_SECRET],
      ]),
      ...Object.entries(env(services['db-roles']!))
        .filter(([k]) => k.endsWith('_PASSWORD'))
        .map(([k, v]): [string, string] => [`db-roles ${k}`, v]),
      ...Object.entries(env(services['minio-identities']!))
        .filter(([k]) => k.includes('SECRET'))
        .map(([k, v]): [string, string] => [`minio-identities ${k}`, v]),
      ['seed S3_SECRET_KEY', env(services.seed!).S3_SECRET_KEY],
      ['worker-webhooks WEBHOOK_SECRETS_KEY', env(services['worker-webhooks']!).WEBHOOK_SECRETS_KEY],
      ['migrate WEBHOOK_SECRETS_KEY', env(services.migrate!).WEBHOOK_SECRETS_KEY],
      ...gateways.map((g): [string, string | undefined] => [`${g} WEBHOOK_SECRETS_KEY`, env(services[g]!).WEBHOOK_SECRETS_KEY]),
      ['migrate DATABASE_URL', env(services.migrate!).DATABASE_URL],
      ['postgres POSTGRES_PASSWORD', env(services.postgres!).POSTGRES_PASSWORD],
      ['db-roles PGPASSWORD', env(services['db-roles']!).PGPASSWORD],
      ['temporal POSTGRES_PWD', env(services.temporal!).POSTGRES_PWD],
      ['temporal-schema SQL_PASSWORD', env(services['temporal-schema']!).SQL_PASSWORD],
      ['minio MINIO_ROOT_PASSWORD', env(services.minio!).MINIO_ROOT_PASSWORD],
      ['minio-bucket MINIO_ROOT_PASSWORD', env(services['minio-bucket']!).MINIO_ROOT_PASSWORD],
    ];
    for (const [what, value] of secrets) assert.ok(requiredVar(value), `${what} must be \${VAR:?…}, is ${value}`);
    assert.equal(requiredVar(api.DATABASE_URL), 'MEDIAGEN_GATEWAY_DB_PASSWORD');
  });

  test("each service uses its fleet's storage identity, made from shared/storage-policies.ts; only the reconciler's may set the bucket lifecycle, and one process has it", () => {
    const minio = env(services.minio!);
    const root = [interpolate(minio.MINIO_ROOT_USER!), interpolate(minio.MINIO_ROOT_PASSWORD!)];
    const setup = env(services['minio-identities']!);
    assert.deepEqual(text(services['minio-identities']!.command), 'node dist/scripts/minio-identities.js --secrets-from-env');
    assert.deepEqual([interpolate(setup.S3_ACCESS_KEY!), interpolate(setup.S3_SECRET_KEY!)], root, 'the identities are made with the root user');
    assert.equal(setup.S3_BUCKET, env(services[gateways[0]!]!).S3_BUCKET);
    for (const identity of storageIdentities)
      assert.equal(requiredVar(setup[secretVariable(identity)]), secretVariable(identity), `${identity}: its secret is required`);
    const byIdentity: Record<string, string[]> = {};
    for (const p of processes) {
      const e = env(services[p.name]!);
      const identity = identityOf(p);
      assert.equal(e.S3_ACCESS_KEY, identityUser(identity), `${p.name} uses the ${identity} identity`);
      assert.equal(requiredVar(e.S3_SECRET_KEY), secretVariable(identity), `${p.name}: the secret minio-identities gives ${identityUser(identity)}`);
      assert.ok(!root.includes(interpolate(e.S3_ACCESS_KEY!)) && !root.includes(interpolate(e.S3_SECRET_KEY!)), `${p.name} holds no root credential`);
      (byIdentity[identity] ??= []).push(p.name);
    }
    assert.deepEqual(byIdentity.reconciler, ['worker-core'], 'one process runs the reconciler, and it alone has its identity');
    assert.deepEqual(byIdentity.gateway, gateways);
    // The policies the step makes: every resource in the bucket, bucket configuration for the reconciler alone.
    const bucket = env(services[gateways[0]!]!).S3_BUCKET!;
    for (const identity of storageIdentities) {
      const policy = storagePolicy(identity, bucket);
      const actions = policy.Statement.flatMap((st) => st.Action);
      for (const st of policy.Statement)
        for (const r of st.Resource) assert.ok(r === `arn:aws:s3:::${bucket}` || r.startsWith(`arn:aws:s3:::${bucket}/`), `${identity}: ${r}`);
      assert.equal(actions.includes('s3:PutLifecycleConfiguration'), identity === 'reconciler', `${identity} and the bucket lifecycle`);
      assert.ok(!actions.some((a) => /Policy|\*/.test(a)), `${identity}: no policy rights, no wildcard action`);
    }
    // Root credentials: the MinIO server, the one-shot bucket and identity steps, and the seed (the catalog's media) only.
    const withRoot = Object.entries(services)
      .filter(([, svc]) => Object.values(env(svc)).some((v) => /MINIO_ROOT_PASSWORD/.test(v)))
      .map(([name]) => name)
      .sort();
    assert.deepEqual(withRoot, ['minio', 'minio-bucket', 'minio-identities', 'seed']);
    assert.equal(env(services.migrate!).S3_ACCESS_KEY, undefined, 'the admin CLI holds no S3 key');
    assert.equal(env(services.migrate!).S3_SECRET_KEY, undefined);
    // The one user an older install gave every process is removed.
    assert.match(interpolate(text(services['minio-bucket']!.command)), /mc admin user rm local "\$LEGACY_USER"/);
  });

  test('registers the default namespace and our five search attributes as Keyword', () => {
    const cmd = text(services['temporal-setup']!.command);
    assert.match(cmd, /temporal operator namespace create --namespace default/);
    for (const name of ['WorkspaceId', 'ProjectId', 'JobKind', 'MediaModel', 'JobStatus', 'ServingProvider', 'JobPriority'])
      assert.match(cmd, new RegExp(`\\b${name}\\b`));
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
      assert.ok(deps(s).includes('minio-identities'), `${s} waits for its storage identity`);
      assert.ok(deps(s).includes('seed'), `${s} waits for the catalog`);
    }
    assert.ok(deps('minio-identities').includes('minio-bucket'));
    assert.ok(deps('seed').includes('minio-bucket') && deps('seed').includes('migrate'));
  });

  test('the gateways listen on the compose network only (no published port), behind the load balancer', () => {
    for (const g of gateways) {
      assert.equal(env(services[g]!).HOST, '0.0.0.0', `${g} listens on its container's interfaces`);
      assert.deepEqual(services[g]!.ports ?? [], [], `${g} publishes no port`);
    }
    const published = Object.entries(services).filter(([, s]) => (s.ports ?? []).some((p) => interpolate(p).split(':').at(-2) === '8080'));
    assert.deepEqual(
      published.map(([name]) => name),
      ['lb'],
      'only the load balancer publishes the API port',
    );
  });

  test('the load balancer: nginx with its config from ops/, on loopback by default, in front of every gateway, setting X-Forwarded-For the gateways trust', () => {
    const lb = services.lb!;
    assert.match(lb.image ?? '', /^nginx:\d+\.\d+(\.\d+)?-alpine$/, 'a pinned nginx image');
    const mount = ((lb as { volumes?: string[] }).volumes ?? []).find((v) => v.endsWith(':/etc/nginx/conf.d/default.conf:ro'));
    assert.ok(mount, 'its config is mounted read-only as the default server');
    const confPath = fileURLToPath(new URL(`../../../${mount.split(':')[0]!.replace(/^\.\//, '')}`, import.meta.url));
    assert.match(confPath, /\/ops\/nginx\//);
    const conf = readFileSync(confPath, 'utf8').replace(/#.*$/gm, '');
    assert.deepEqual(
      (lb.ports ?? []).map((p) => interpolate(p)),
      ['127.0.0.1:8080:8080'],
      'published on loopback unless MEDIAGEN_API_BIND says otherwise',
    );
    for (const g of gateways) assert.deepEqual((lb.depends_on as Record<string, unknown>)[g], { condition: 'service_healthy' }, `waits for ${g}`);

    const upstream = /upstream\s+(\S+)\s*\{([^}]*)\}/.exec(conf);
    assert.ok(upstream, 'an upstream block');
    const servers = [...upstream[2]!.matchAll(/^\s*server\s+(\S+)/gm)].map((m) => m[1]);
    const gatewayConfigs = gateways.map((g) => loadConfig(Object.fromEntries(Object.entries(env(services[g]!)).map(([k, v]) => [k, interpolate(v)]))));
    assert.deepEqual(
      servers,
      gateways.map((g, i) => `${g}:${gatewayConfigs[i]!.PORT}`),
      'every gateway, at the port it listens on',
    );
    assert.match(conf, new RegExp(`proxy_pass\\s+http://${upstream[1]};`));
    // Replaced, not appended to ($proxy_add_x_forwarded_for): a client cannot name another address.
    assert.match(conf, /proxy_set_header\s+X-Forwarded-For\s+\$remote_addr;/);
    assert.match(conf, /limit_conn\s+\S+\s+\d+;/, 'connections capped per client address');
    assert.match(conf, /proxy_request_buffering\s+off;/, 'uploads stream through');
    assert.match(conf, /proxy_buffering\s+off;/, 'event streams are not buffered');
    const seconds = (name: string, block: string) => Number(new RegExp(`${name}\\s+(\\d+)s;`).exec(block)?.[1]);
    for (const [i, g] of gateways.entries()) {
      const cfg = gatewayConfigs[i]!;
      // nginx drops an idle upstream connection before the gateway would: it never reuses a closed one.
      assert.ok(
        seconds('keepalive_timeout', upstream[2]!) * 1000 < cfg.GATEWAY_KEEP_ALIVE_TIMEOUT_MS,
        `${g}: upstream keepalive_timeout below GATEWAY_KEEP_ALIVE_TIMEOUT_MS`,
      );
      assert.ok(
        seconds('client_header_timeout', conf) * 1000 <= cfg.GATEWAY_HEADERS_TIMEOUT_MS,
        `${g}: the balancer cuts slow headers no later than the gateway`,
      );
      // The balancer's address on the compose network (a private range) is trusted; a public one is not.
      const trust = express().set('trust proxy', cfg.TRUST_PROXY).get('trust proxy fn') as (addr: string, hop: number) => boolean;
      assert.equal(trust('172.18.0.7', 0), true, `${g} trusts the load balancer's X-Forwarded-For`);
      assert.equal(trust('203.0.113.9', 0), false, `${g} does not trust a public peer`);
      assert.equal(new URL(cfg.PUBLIC_BASE_URL!).port, '8080', `${g}: media links point at the load balancer`);
    }
  });

  test("each service connects as its fleet's database role: no superuser, no DDL, not the migrate role, granted by migrate --fleet-roles", () => {
    const migrateUser = new URL(interpolate(env(services.migrate!).DATABASE_URL!)).username;
    const temporalUser = env(services.temporal!).POSTGRES_USER;
    const superuser = env(services.postgres!).POSTGRES_USER;
    const roles = env(services['db-roles']!);
    const sqlText = interpolate(text(services['db-roles']!.command));
    const logins = new Set<string>();
    for (const p of processes) {
      const url = new URL(interpolate(env(services[p.name]!).DATABASE_URL!));
      const login = loginOf(p);
      assert.equal(url.username, login, `${p.name} (${p.roles || 'gateway'}) connects as its fleets' role`);
      // Its password is the one db-roles sets for that role.
      const passwordVar = requiredVar(env(services[p.name]!).DATABASE_URL);
      const given = Object.entries(roles).find(([, v]) => requiredVar(v) === passwordVar);
      assert.ok(given, `${p.name}: db-roles sets the password of ${login} from ${passwordVar}`);
      const psqlVar = /-v (\w+)="\$\$?(\w+)"/g;
      const bound = [...text(services['db-roles']!.command).matchAll(psqlVar)].find((m) => m[2] === given[0]);
      assert.ok(bound, `db-roles passes ${given[0]} to psql`);
      assert.match(sqlText, new RegExp(`alter role ${login} password %L', :'${bound[1]}'`), `${login} gets that password`);
      logins.add(login);
    }
    assert.deepEqual([...logins].sort(), ['mediagen_fetch', 'mediagen_gateway', 'mediagen_provider', 'mediagen_webhooks', 'mediagen_workflows_reconciler']);
    for (const login of logins) {
      assert.ok(![migrateUser, temporalUser, superuser].includes(login), `${login} is none of the migrate, Temporal and superuser roles`);
      // Created without any power beyond logging in, owning nothing, with no grant but CONNECT and its fleets' roles.
      assert.match(sqlText, new RegExp(`create role ${login} login nosuperuser nocreatedb nocreaterole noreplication nobypassrls'`), login);
      assert.doesNotMatch(sqlText, new RegExp(`owner ${login}\\b`));
      const grants = [...sqlText.matchAll(/^grant (.+) to (.+);$/gm)].filter((m) => m[2]!.split(/,\s*/).includes(login)).map((m) => m[1]);
      const fleetsOfLogin = login.replace(/^mediagen_/, '').split('_');
      const expected = ['connect on database mediagen', ...(fleetsOfLogin.length > 1 ? [fleetsOfLogin.map((f) => `mediagen_${f}`).join(', ')] : [])];
      assert.deepEqual(grants.sort(), expected.sort(), login);
    }
    // Every fleet role exists (those no service logs in as directly cannot log in at all), and the
    // one role every process once shared can no longer log in.
    for (const f of fleets) if (!logins.has(`mediagen_${f}`)) assert.match(sqlText, new RegExp(`create role mediagen_${f} nologin'`), `mediagen_${f}`);
    assert.match(sqlText, /alter role mediagen_app nologin/);
    assert.match(sqlText, /revoke create on schema public from public;/);
    assert.match(sqlText, new RegExp(`create database mediagen owner ${migrateUser}\\b`));
    // Their table privileges are each fleet's of db/fleet-roles.ts, granted by the schema owner after migrating.
    assert.equal(text(services.migrate!.command), 'node dist/admin/main.js migrate --fleet-roles mediagen');
    const app = Object.fromEntries(Object.entries(env(services[gateways[0]!]!)).map(([k, v]) => [k, interpolate(v)]));
    assert.equal(loadConfig(app).NODE_ENV, 'production');
  });

  test('the webhooks fleet, the gateways and the admin CLI need their own webhook secrets key, and presigned URLs are signed for a host outside clients reach', () => {
    for (const s of ['worker-webhooks', 'migrate', ...gateways])
      assert.equal(requiredVar(env(services[s]!).WEBHOOK_SECRETS_KEY), 'MEDIAGEN_WEBHOOK_SECRETS_KEY', `${s} WEBHOOK_SECRETS_KEY`);
    for (const s of appServices) {
      const presign = new URL(interpolate(env(services[s]!).S3_PRESIGN_ENDPOINT!));
      assert.notEqual(presign.hostname, 'minio', `${s}: the compose-internal host name is not reachable from outside`);
    }
    const vars = Object.fromEntries(Object.entries(env(services['worker-webhooks']!)).map(([k, v]) => [k, interpolate(v)]));
    assert.deepEqual(missingRoleSecrets(loadConfig({ ...vars, WEBHOOK_SECRETS_KEY: '' }), ['webhooks']), [
      'WEBHOOK_SECRETS_KEY: required when NODE_ENV=production for the webhooks role (its own key, not the storage secret)',
    ]);
    assert.deepEqual(missingRoleSecrets(loadConfig(vars), ['webhooks']), []);
    // A gateway as compose starts it has the key, so creating a webhook endpoint does not answer 503.
    const gatewayVars = Object.fromEntries(Object.entries(env(services[gateways[0]!]!)).map(([k, v]) => [k, interpolate(v)]));
    assert.deepEqual(missingRoleSecrets(loadConfig(gatewayVars), ['gateway']), []);
    assert.equal(missingRoleSecrets(loadConfig({ ...gatewayVars, WEBHOOK_SECRETS_KEY: '' }), ['gateway']).length, 1);
  });

  test('no process gets a secret its roles do not read: each its own role-scoped secrets (shared/routing.ts), no more, no fewer', () => {
    for (const p of processes) {
      const e = env(services[p.name]!);
      const roles = p.command === 'gateway' ? ['gateway'] : p.roles.split(',');
      const given = roleScopedSecrets.filter((s) => s in e);
      assert.deepEqual(given, secretsOfRoles(roles), `${p.name} (${roles.join(',')})`);
    }
    assert.deepEqual(
      roleScopedSecrets.filter((s) => s in env(services.migrate!)),
      secretsOfRoles(['admin']),
      'migrate (the admin CLI)',
    );
    assert.deepEqual(secretsOfRoles(['gateway']), ['WEBHOOK_SECRETS_KEY'], 'a gateway holds no provider key; it encrypts webhook endpoint secrets');
    assert.deepEqual(secretsOfRoles(['fetch']), [], 'the fetch fleet (the one that reaches the internet) holds none either');
    assert.deepEqual(secretsOfRoles(['provider:fal']), ['FAL_KEY']);
    assert.deepEqual(secretsOfRoles(['provider:elevenlabs']), ['ELEVENLABS_API_KEY'], "talking actor: ElevenLabs' fleet speaks, fal's lipsyncs");
  });

  test('a gateway without provider keys routes to the providers whose keys the deployment sets (PROVIDER_KEYS_SET)', () => {
    const shell = { FAL_KEY: 'fal-secret', XAI_API_KEY: 'xai-secret' };
    const gateway = loadConfig({
      ...Object.fromEntries(Object.entries(env(services[gateways[0]!]!)).map(([k, v]) => [k, interpolate(v, shell)])),
      PROVIDERS_MODE: 'live',
    });
    assert.equal(gateway.FAL_KEY, undefined);
    assert.equal(gateway.PROVIDER_KEYS_SET, 'FAL_KEY,XAI_API_KEY,');
    assert.equal(routeMode(gateway, 'grok-video'), 'live');
    assert.equal(routeMode(gateway, 'gpt-image-1.5'), 'unavailable', 'no OpenAI or Azure key set');
    const fal = Object.fromEntries(Object.entries(env(services['worker-fal']!)).map(([k, v]) => [k, interpolate(v, shell)]));
    assert.equal(fal.FAL_KEY, 'fal-secret');
    assert.equal(fal.XAI_API_KEY, undefined);
  });

  test('the prod profile gives role-scoped secrets per process, through the same map', () => {
    const script = readFileSync(stackProdPath, 'utf8');
    const common = /local common=\(([\s\S]*?)\)\n/.exec(script)![1]!;
    for (const s of roleScopedSecrets) assert.doesNotMatch(common, new RegExp(`\\b${s}=`), `${s} is not common to every process`);
    assert.match(script, /role-secrets\.js/, 'the per-role list comes from shared/routing.ts (dist/scripts/role-secrets.js)');
    // The gateway's launch, and every worker's (start_worker, whatever its build): the overrides and
    // secrets only through role_env, never the whole overrides list.
    const gateways = script
      .split('env -i "${common[@]}"')
      .slice(1)
      .filter((part) => /setsid node/.test(part.split('\n').slice(0, 4).join('\n')));
    assert.equal(gateways.length, 1, 'one gateway launch');
    assert.doesNotMatch(gateways[0]!.split('setsid')[0]!, /\$\{overrides\[@\]\}/, 'overrides only through role_env');
    assert.match(gateways[0]!.split('setsid')[0]!, /\$\{own_env\[@\]\}/);
    const startWorker = /\nstart_worker\(\) \{([\s\S]*?)\n\}/.exec(script)![1]!;
    assert.match(
      startWorker,
      /mapfile -t role_vars < <\(role_env "\$\{PROD_ROLES\[\$name\]\}"; fleet_env "\$\{PROD_ROLES\[\$name\]\}"\)/,
      "a worker's role-scoped variables come from role_env, its database role and storage identity from fleet_env",
    );
    assert.match(startWorker, /env -i "\$@" "\$\{role_vars\[@\]\}"/);
    const workerEnv = /local worker_env=\(([\s\S]*?)\)\n/.exec(script)![1]!;
    assert.doesNotMatch(workerEnv, /overrides/, "the workers' common environment carries no override");
  });

  test('the workers that run media tools make the sandbox (root with its six capabilities, required); the others run as node with every capability dropped and it off', () => {
    const workers = Object.entries(services).filter(([, s]) => env(s).WORKER_ROLES !== undefined);
    assert.ok(workers.length > 0);
    for (const [name, s] of workers) {
      const roles = interpolate(env(s).WORKER_ROLES!).split(',');
      assert.deepEqual(s.cap_drop, ['ALL'], name);
      assert.ok(s.security_opt?.includes('no-new-privileges:true'), `${name} cannot gain privileges`);
      if (runsMediaTools(roles)) {
        assert.equal(interpolate(env(s).MEDIA_SANDBOX ?? ''), 'required', name);
        assert.equal(s.user, '0:0', `${name}: unshare --net and the switch to the sandbox user need root`);
        assert.deepEqual([...(s.cap_add ?? [])].sort(), ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'SETGID', 'SETUID', 'SYS_ADMIN'], name);
      } else {
        assert.equal(interpolate(env(s).MEDIA_SANDBOX ?? ''), 'off', name);
        assert.equal(s.user, 'node', name);
        assert.deepEqual(s.cap_add ?? [], [], name);
      }
    }
  });

  test('worker metrics bind loopback unless set: compose sets 0.0.0.0 for its workers explicitly, the image and the prod profile do not', () => {
    const dockerfile = readFileSync(fileURLToPath(new URL('../../../Dockerfile', import.meta.url)), 'utf8');
    assert.doesNotMatch(dockerfile, /METRICS_HOST/);
    const minimal = { DATABASE_URL: 'postgres://u:p@h/db', TEMPORAL_ADDRESS: 'h:7233', S3_ENDPOINT: 'http://h:9000', S3_ACCESS_KEY: 'a', S3_SECRET_KEY: 'b' };
    assert.equal(loadConfig({ ...minimal, HOST: '0.0.0.0' }).METRICS_HOST, '127.0.0.1', "the image's HOST does not move metrics off loopback");
    assert.ok(!prodProfileVariables().worker.includes('METRICS_HOST'), 'the prod profile keeps the default');
    for (const p of processes.filter((x) => x.command === 'worker')) {
      const e = env(services[p.name]!);
      assert.equal(e.METRICS_HOST, '0.0.0.0', `${p.name}: set explicitly for the compose network`);
      assert.ok(!(services[p.name]!.ports ?? []).some((port) => port.endsWith(':9464')), `${p.name}: its metrics are not published`);
    }
    const yamlText = readFileSync(composePath, 'utf8');
    assert.match(yamlText, /#.*\n.*\n\s*WORKER_METRICS_PORT: 9464\n\s*METRICS_HOST: 0\.0\.0\.0/, 'with a comment saying why');
  });
});
