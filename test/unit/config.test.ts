// shared/config.ts: test-only switches are refused in production, naming the variable (never its value).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig, testOnlySettings } from '../../shared/config.js';

const base = {
  DATABASE_URL: 'postgres://media@127.0.0.1:5432/media',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  S3_ENDPOINT: 'http://127.0.0.1:9000',
  S3_ACCESS_KEY: 'media',
  S3_SECRET_KEY: 'not-a-real-secret',
};

/** A production environment needs its own webhook secrets key. */
const prod = { ...base, NODE_ENV: 'production', WEBHOOK_SECRETS_KEY: 'a-key-of-its-own' };

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
    assert.doesNotThrow(() => loadConfig({ ...prod, LOCAL_RENDER_FAULTS: 'false', LOCAL_RENDER_LATENCY_MS: '0', FETCH_ALLOW_LOOPBACK_ORIGIN: '', WEBHOOK_ALLOW_LOOPBACK: 'false' }));
  });
});

describe('the webhook secrets key', () => {
  test('production refuses to start without its own key (unset, empty, or the storage secret), naming it and not the value', () => {
    for (const key of [undefined, '', base.S3_SECRET_KEY]) {
      assert.throws(
        () => loadConfig({ ...prod, WEBHOOK_SECRETS_KEY: key }),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError);
          assert.match(err.message, /WEBHOOK_SECRETS_KEY: (required when NODE_ENV=production|must differ from S3_SECRET_KEY)/);
          assert.ok(!err.message.includes(base.S3_SECRET_KEY), 'no secret is echoed');
          return true;
        },
      );
    }
  });

  test('outside production it may be unset (the storage secret is used)', () => {
    for (const env of ['test', 'development']) assert.equal(loadConfig({ ...base, NODE_ENV: env }).WEBHOOK_SECRETS_KEY, undefined);
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
