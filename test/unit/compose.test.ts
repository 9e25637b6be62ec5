// docker-compose.yml cannot run here (no Docker engine), so this keeps it honest: it parses, the
// gateway and worker get only variables the config module reads, the required ones are set, the
// environment (with compose's defaults interpolated) passes the config module's own validation,
// and the wiring (dependencies, health checks, search attributes, bucket) is complete.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { configVariables, loadConfig } from '../../worker/config.js';

const composePath = fileURLToPath(new URL('../../../docker-compose.yml', import.meta.url));

interface Service {
  image?: string;
  build?: unknown;
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: Record<string, { condition: string }> | string[];
  healthcheck?: { test: string[] | string };
  command?: string[] | string;
  entrypoint?: string[] | string;
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

/** Compose interpolation of ${VAR:-default} / ${VAR-default} / ${VAR} with nothing set in the shell. */
function interpolate(value: string): string {
  return value.replace(/\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}/g, (_m, _name: string, dflt?: string) => dflt ?? '').replace(/\$\$/g, '$');
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
      assert.deepEqual(unknown, [], `${s} sets variables worker/config.ts does not read`);
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
    const minio = env(services.minio!);
    assert.equal(interpolate(api.S3_ACCESS_KEY!), interpolate(minio.MINIO_ROOT_USER!));
    assert.equal(interpolate(api.S3_SECRET_KEY!), interpolate(minio.MINIO_ROOT_PASSWORD!));
    assert.match(text(services['minio-bucket']!.command), new RegExp(`mc mb --ignore-existing local/${api.S3_BUCKET}\\b`));
    const t = env(services.temporal!);
    assert.equal(t.POSTGRES_SEEDS, 'postgres');
    assert.equal(interpolate(t.POSTGRES_PWD!), interpolate(pg.POSTGRES_PASSWORD!));
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
