// docker-compose.yml cannot run here (no Docker engine), so this keeps it honest: it parses, the
// gateway and worker get only variables the config module reads, the required ones are set, the
// environment (with compose's defaults interpolated) passes the config module's own validation,
// and the wiring (dependencies, health checks, search attributes, bucket) is complete.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { configVariables, loadConfig } from '../../shared/config.js';

const composePath = fileURLToPath(new URL('../../../docker-compose.yml', import.meta.url));

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
const appServices = ['api', 'worker'] as const;
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
  test('has every part: postgres, temporal (+ UI, search attributes), minio (+ bucket), gateway and worker', () => {
    for (const name of ['postgres', 'temporal', 'temporal-ui', 'temporal-search-attributes', 'minio', 'minio-bucket', 'api', 'worker']) {
      assert.ok(services[name], `service ${name}`);
    }
    assert.match(services.temporal!.image ?? '', /^temporalio\/auto-setup:\d/);
    assert.match(services['temporal-ui']!.image ?? '', /^temporalio\/ui:\d/);
    assert.match(services['temporal-search-attributes']!.image ?? '', /^temporalio\/admin-tools:\d/);
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

  test('the gateway, worker and one-shots share one set of service addresses and credentials', () => {
    const api = env(services.api!);
    const worker = env(services.worker!);
    for (const k of required) assert.equal(api[k], worker[k], k);
    const pg = env(services.postgres!);
    const db = new URL(interpolate(api.DATABASE_URL!));
    assert.equal(db.username, pg.POSTGRES_USER);
    assert.equal(decodeURIComponent(db.password), interpolate(pg.POSTGRES_PASSWORD!));
    assert.equal(db.pathname, `/${pg.POSTGRES_DB}`);
    const setup = env(services['minio-bucket']!);
    assert.equal(api.S3_ACCESS_KEY, setup.MEDIAGEN_S3_ACCESS_KEY, 'the service uses the user the setup step creates');
    assert.equal(api.S3_SECRET_KEY, setup.MEDIAGEN_S3_SECRET_KEY);
    assert.match(text(services['minio-bucket']!.command), new RegExp(`mc mb --ignore-existing local/${api.S3_BUCKET}\\b`));
    const t = env(services.temporal!);
    assert.equal(t.POSTGRES_SEEDS, 'postgres');
    assert.equal(interpolate(t.POSTGRES_PWD!), interpolate(pg.POSTGRES_PASSWORD!));
  });

  test('Temporal (frontend, Web UI) and MinIO (API, console) are published on 127.0.0.1 only', () => {
    for (const name of ['temporal', 'temporal-ui', 'minio']) {
      const ports = services[name]!.ports ?? [];
      assert.ok(ports.length > 0, `${name} publishes its ports`);
      for (const p of ports) assert.match(p, /^127\.0\.0\.1:\d+:\d+$/, `${name} publishes ${p}`);
    }
  });

  test('every password is required (${VAR:?}), never a default', () => {
    const api = env(services.api!);
    const secrets: Array<[string, string | undefined]> = [
      ['api DATABASE_URL', api.DATABASE_URL],
      ['api S3_SECRET_KEY', api.S3_SECRET_KEY],
      ['postgres POSTGRES_PASSWORD', env(services.postgres!).POSTGRES_PASSWORD],
      ['temporal POSTGRES_PWD', env(services.temporal!).POSTGRES_PWD],
      ['minio MINIO_ROOT_PASSWORD', env(services.minio!).MINIO_ROOT_PASSWORD],
      ['minio-bucket MINIO_ROOT_PASSWORD', env(services['minio-bucket']!).MINIO_ROOT_PASSWORD],
    ];
    for (const [what, value] of secrets) assert.ok(requiredVar(value), `${what} must be \${VAR:?…}, is ${value}`);
    assert.equal(requiredVar(api.DATABASE_URL), 'MEDIAGEN_DB_PASSWORD');
  });

  test('the service uses a MinIO user limited to its bucket, not the root user', () => {
    const api = env(services.api!);
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

  test('registers our five search attributes as Keyword', () => {
    const cmd = text(services['temporal-search-attributes']!.command);
    for (const name of ['WorkspaceId', 'ProjectId', 'JobKind', 'MediaModel', 'JobStatus']) assert.match(cmd, new RegExp(`\\b${name}\\b`));
    assert.match(cmd, /search-attribute create .*--type Keyword/);
  });

  test('health checks on the servers, and depends_on waits for them', () => {
    for (const name of ['postgres', 'temporal', 'minio', 'api']) assert.ok(services[name]!.healthcheck?.test, `${name} has a health check`);
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
      assert.ok(deps(s).includes('temporal-search-attributes'), `${s} waits for the search attributes`);
    }
    assert.ok(deps('migrate').includes('minio-bucket'));
  });

  test('the gateway listens on all interfaces inside its container', () => {
    const api = env(services.api!);
    assert.equal(api.HOST, '0.0.0.0');
    assert.match(text(services.api!.command), /dist\/api\/server\.js/);
    assert.match(text(services.worker!.command), /dist\/worker\/main\.js/);
  });
});
