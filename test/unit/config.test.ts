// shared/config.ts: test-only switches and placeholder providers are refused in production, and
// retired variables everywhere, naming the variable (never its value).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ConfigError, configVariables, loadConfig, testOnlySettings } from '../../shared/config.js';
import { retiredVariables } from '../../shared/config/retired.js';
import { dbTimeouts } from '../../db/index.js';
import { missingRoleSecrets } from '../../shared/routing.js';

const base = {
  DATABASE_URL: 'postgres://media@127.0.0.1:5432/media',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  S3_ENDPOINT: 'http://127.0.0.1:9000',
  S3_ACCESS_KEY: 'media',
  S3_SECRET_KEY: 'not-a-real-secret',
};

/** A production environment needs its own webhook secrets key, and live providers (placeholders are refused). */
const prod = { ...base, NODE_ENV: 'production', WEBHOOK_SECRETS_KEY: 'a-key-of-its-own', PROVIDERS_MODE: 'live' };

const switchedOn: Record<string, string> = {
  FETCH_ALLOW_LOOPBACK_ORIGIN: 'https://127.0.0.1:8443',
  LOCAL_RENDER_FAULTS: 'true',
  LOCAL_RENDER_LATENCY_MS: '250',
  WEBHOOK_ALLOW_LOOPBACK: 'true',
};

describe('test-only settings', () => {
  test('every listed switch has a value that turns it on here', () => {
    assert.deepEqual(testOnlySettings.map((s) => s.name).sort(), Object.keys(switchedOn).sort());
  });

  for (const [name, value] of Object.entries(switchedOn)) {
    test(`${name} is refused when NODE_ENV=production, with its name and without its value`, () => {
      assert.throws(
        () => loadConfig({ ...prod, [name]: value }),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError);
          assert.match(err.message, new RegExp(`${name}: test-only setting, refused when NODE_ENV=production`));
          assert.ok(!err.message.includes(value), 'the value is not echoed');
          return true;
        },
      );
    });

    test(`${name} is accepted outside production`, () => {
      for (const env of ['test', 'development']) assert.doesNotThrow(() => loadConfig({ ...base, NODE_ENV: env, [name]: value }));
    });
  }

  test('a production config without them loads, and an off value (false, 0, empty) is not refused', () => {
    assert.equal(loadConfig(prod).NODE_ENV, 'production');
    assert.doesNotThrow(() =>
      loadConfig({ ...prod, LOCAL_RENDER_FAULTS: 'false', LOCAL_RENDER_LATENCY_MS: '0', FETCH_ALLOW_LOOPBACK_ORIGIN: '', WEBHOOK_ALLOW_LOOPBACK: 'false' }),
    );
  });
});

describe('the webhook secrets key', () => {
  test('production refuses the storage secret as the key, naming it and not the value', () => {
    assert.throws(
      () => loadConfig({ ...prod, WEBHOOK_SECRETS_KEY: base.S3_SECRET_KEY }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, /WEBHOOK_SECRETS_KEY: must differ from S3_SECRET_KEY/);
        assert.ok(!err.message.includes(base.S3_SECRET_KEY), 'no secret is echoed');
        return true;
      },
    );
  });

  test('in production only the roles that read it need it (the webhooks fleet; the gateways to store endpoint secrets; the admin CLI to rotate)', () => {
    for (const key of [undefined, '']) {
      const config = loadConfig({ ...prod, WEBHOOK_SECRETS_KEY: key });
      assert.deepEqual(missingRoleSecrets(config, ['workflows', 'io', 'provider:fal']), []);
      assert.deepEqual(missingRoleSecrets(config, ['fetch', 'reconciler']), []);
      assert.match(missingRoleSecrets(config, ['webhooks']).join('\n'), /WEBHOOK_SECRETS_KEY: required when NODE_ENV=production for the webhooks role/);
      // The gateway encrypts the signing secret of every webhook endpoint a customer creates or
      // rotates: without the key it would answer 503 there, so it refuses to start instead.
      assert.match(missingRoleSecrets(config, ['gateway']).join('\n'), /WEBHOOK_SECRETS_KEY: required when NODE_ENV=production for the gateway role/);
    }
    assert.deepEqual(missingRoleSecrets(prod, ['webhooks']), []);
    assert.deepEqual(missingRoleSecrets(prod, ['gateway']), []);
  });

  test('outside production it may be unset (the storage secret is used)', () => {
    for (const env of ['test', 'development']) assert.equal(loadConfig({ ...base, NODE_ENV: env }).WEBHOOK_SECRETS_KEY, undefined);
  });
});

describe('placeholder providers in production', () => {
  /** Every provider key set: auto serves every model live. */
  const allKeys = {
    FAL_KEY: 'k',
    OPENAI_API_KEY: 'k',
    ELEVENLABS_API_KEY: 'k',
    XAI_API_KEY: 'k',
    GEMINI_API_KEY: 'k',
    ARK_API_KEY: 'k',
    DASHSCOPE_API_KEY: 'k',
    AZURE_OPENAI_API_KEY: 'k',
    AZURE_OPENAI_ENDPOINT: 'https://example.openai.azure.com',
  };
  const refusedNaming = (pattern: RegExp) => (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, /ALLOW_PLACEHOLDER_PROVIDERS=1/);
    assert.match(err.message, pattern);
    return true;
  };

  test('PROVIDERS_MODE=local (or unset: its default) is refused, naming the allow variable', () => {
    assert.throws(() => loadConfig({ ...prod, PROVIDERS_MODE: 'local' }), refusedNaming(/PROVIDERS_MODE: local serves every model from the local renderer/));
    assert.throws(() => loadConfig({ ...prod, PROVIDERS_MODE: undefined }), refusedNaming(/PROVIDERS_MODE: local/));
    assert.throws(() => loadConfig({ ...prod, PROVIDERS_MODE: 'local', ALLOW_PLACEHOLDER_PROVIDERS: '0' }), refusedNaming(/PROVIDERS_MODE: local/));
  });

  test('auto is refused when a model would fall back to the local renderer, naming the models; with every key it loads', () => {
    const { FAL_KEY: _fal, ...noFal } = allKeys;
    assert.throws(
      () => loadConfig({ ...prod, ...noFal, PROVIDERS_MODE: 'auto' }),
      refusedNaming(/PROVIDERS_MODE: auto would serve [^\n]*nano-banana-2[^\n]* from the local renderer/),
    );
    assert.equal(loadConfig({ ...prod, ...allKeys, PROVIDERS_MODE: 'auto' }).PROVIDERS_MODE, 'auto');
  });

  test('ALLOW_PLACEHOLDER_PROVIDERS=1 runs them on purpose; outside production nothing is refused', () => {
    assert.equal(loadConfig({ ...prod, PROVIDERS_MODE: 'local', ALLOW_PLACEHOLDER_PROVIDERS: '1' }).PROVIDERS_MODE, 'local');
    assert.equal(loadConfig({ ...prod, PROVIDERS_MODE: 'auto', ALLOW_PLACEHOLDER_PROVIDERS: 'true' }).PROVIDERS_MODE, 'auto');
    for (const env of ['test', 'development']) assert.doesNotThrow(() => loadConfig({ ...base, NODE_ENV: env, PROVIDERS_MODE: 'local' }));
  });

  test('a production gateway process with PROVIDERS_MODE=local and no allow refuses to start, naming the variable', async () => {
    const gatewayMain = fileURLToPath(new URL('../../api/server.js', import.meta.url));
    // Only these variables: nothing of the test run's environment decides the outcome. Loopback
    // addresses only, and the config refuses before anything connects.
    const env = { PATH: process.env.PATH ?? '', ...prod, PROVIDERS_MODE: 'local', HOST: '127.0.0.1', PORT: '0', OTEL_EXPORTER_OTLP_ENDPOINT: '' };
    const child = spawn(process.execPath, [gatewayMain], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.notEqual(code, 0, out);
    assert.match(out, /PROVIDERS_MODE: local serves every model from the local renderer/);
    assert.match(out, /ALLOW_PLACEHOLDER_PROVIDERS=1/);
    assert.doesNotMatch(out, /listening on/);
  });
});

describe('upload lifetimes', () => {
  test('a default retention longer than the maximum a request may ask for is refused, naming both', () => {
    assert.throws(
      () => loadConfig({ ...base, UPLOAD_RETENTION_SECONDS: '7200', UPLOAD_MAX_RETENTION_SECONDS: '3600' }),
      (err: unknown) => err instanceof ConfigError && /UPLOAD_RETENTION_SECONDS: must not exceed UPLOAD_MAX_RETENTION_SECONDS/.test(err.message),
    );
    const c = loadConfig(base);
    assert.deepEqual([c.UPLOAD_RETENTION_SECONDS, c.UPLOAD_MAX_RETENTION_SECONDS, c.TRACE_TRUST_INBOUND], [30 * 86_400, 90 * 86_400, false]);
  });
});

describe('retired variables', () => {
  test('each is read no more: set, the process refuses to start, naming it and what decides the value now; unset or empty, it loads', () => {
    for (const [name, now] of Object.entries(retiredVariables)) {
      assert.ok(!configVariables.includes(name), `${name} is retired, not a variable of the schema`);
      assert.throws(
        () => loadConfig({ ...base, [name]: '12345' }),
        (err: unknown) => err instanceof ConfigError && err.message.includes(`${name}: no longer read (${now}); remove it`) && !err.message.includes('12345'),
        name,
      );
      assert.doesNotThrow(() => loadConfig({ ...base, [name]: '' }), name);
    }
  });

  test('what replaced them: the idle-in-transaction bound follows the statement timeout', () => {
    assert.deepEqual(dbTimeouts(loadConfig(base)), { statementMs: 30_000, lockMs: 5_000, idleInTransactionMs: 60_000 });
    assert.deepEqual(dbTimeouts(loadConfig({ ...base, DATABASE_STATEMENT_TIMEOUT_MS: '0' })).idleInTransactionMs, 0);
    assert.equal(dbTimeouts(loadConfig({ ...base, DATABASE_STATEMENT_TIMEOUT_MS: '45000' })).idleInTransactionMs, 90_000);
  });
});
