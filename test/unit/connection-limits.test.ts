// TRUST_PROXY and the gateway server's timeouts, as the config module reads them.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import { loadConfig } from '../../shared/config.js';
import { serverTimeouts } from '../../api/connection-limits.js';

const base = {
  DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  S3_ENDPOINT: 'http://127.0.0.1:9000',
  S3_ACCESS_KEY: 'a',
  S3_SECRET_KEY: 'b',
};

const trustFn = (value: string) =>
  express()
    .set('trust proxy', loadConfig({ ...base, TRUST_PROXY: value }).TRUST_PROXY)
    .get('trust proxy fn') as (addr: string, hop: number) => boolean;

describe('TRUST_PROXY', () => {
  test('unset or empty trusts no peer: X-Forwarded-For is ignored', () => {
    assert.equal(loadConfig(base).TRUST_PROXY, false);
    assert.equal(trustFn('')('127.0.0.1', 0), false);
  });

  test('addresses, CIDR ranges and range names trust exactly those peers', () => {
    const trust = trustFn('10.0.0.0/8, 192.0.2.7, loopback');
    assert.equal(trust('10.1.2.3', 0), true);
    assert.equal(trust('192.0.2.7', 0), true);
    assert.equal(trust('::1', 0), true);
    assert.equal(trust('203.0.113.1', 0), false);
  });

  test('a hop count trusts that many proxies in front', () => {
    assert.equal(loadConfig({ ...base, TRUST_PROXY: '1' }).TRUST_PROXY, 1);
  });

  test('"true" (every peer could forge its address) and malformed entries are refused, naming the variable', () => {
    for (const bad of ['true', '10.0.0.0/33', 'example.com', '1.2.3.4/8/9']) {
      assert.throws(() => loadConfig({ ...base, TRUST_PROXY: bad }), /TRUST_PROXY/, bad);
    }
  });
});

describe('gateway server timeouts', () => {
  test('defaults: headers 20 s, request 300 s, keep-alive 65 s, checked every second', () => {
    assert.deepEqual(serverTimeouts(loadConfig(base)), {
      headersTimeout: 20_000,
      requestTimeout: 300_000,
      keepAliveTimeout: 65_000,
      connectionsCheckingInterval: 1_000,
    });
  });

  test('the header timeout never exceeds the request timeout (Node refuses it), and a short one is checked often', () => {
    const t = serverTimeouts(loadConfig({ ...base, GATEWAY_HEADERS_TIMEOUT_MS: '30000', GATEWAY_REQUEST_TIMEOUT_MS: '10000' }));
    assert.equal(t.headersTimeout, 10_000);
    assert.equal(serverTimeouts(loadConfig({ ...base, GATEWAY_HEADERS_TIMEOUT_MS: '400' })).connectionsCheckingInterval, 100);
  });
});
