// Temporal behind a frontend that demands credentials, with the real service: the test stack's
// Temporal server cannot require API keys or client certificates, so a loopback HTTP/2 proxy
// (test/support/grpc-auth-proxy.ts) stands in front of it, terminating TLS with the prod profile's
// certificates, demanding a client certificate its CA signed, and refusing every gRPC stream whose
// `authorization` is not `Bearer <an accepted key>` with grpc-status 16 (UNAUTHENTICATED). The
// gateway and the worker fleet connect through it exactly as configured (shared/temporal-connection.ts).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { createTestDatabase, createTenant, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import { startGateway, startWorkers, type InProcessGateway, type Workers } from '../support/services.js';
import { createImage, jobFinished } from '../support/job-helpers.js';
import { startGrpcAuthProxy, type GrpcAuthProxy } from '../support/grpc-auth-proxy.js';
import { makeCerts, type CertSet } from '../support/prod-certs.js';
import { connectClient, connectNative, stopApiKeyWatchers } from '../../shared/temporal-connection.js';
import type { Config } from '../../shared/config.js';

let certs: CertSet;
let proxy: GrpcAuthProxy;
let tdb: TestDatabase;
let upstream: string;
let keyFile: string;

/** The proxy's address with the app's mTLS pair, checked against the profile's CA. */
const tlsEnv = () => ({
  TEMPORAL_ADDRESS: proxy.address,
  TEMPORAL_TLS_CA_FILE: certs.file('ca.pem'),
  TEMPORAL_TLS_CERT_FILE: certs.file('client.pem'),
  TEMPORAL_TLS_KEY_FILE: certs.file('client.key'),
  TEMPORAL_TLS_SERVER_NAME: 'localhost',
});

before(async () => {
  certs = await makeCerts();
  tdb = await createTestDatabase();
  upstream = testConfig(tdb.url).TEMPORAL_ADDRESS;
  keyFile = certs.file('temporal-api-key');
  await writeFile(keyFile, 'first-key\n', { mode: 0o600 });
  proxy = await startGrpcAuthProxy({
    upstream,
    keys: ['first-key'],
    tls: { certFile: certs.file('temporal-server.pem'), keyFile: certs.file('temporal-server.key'), clientCaFile: certs.file('ca.pem') },
  });
});

after(async () => {
  stopApiKeyWatchers();
  await proxy?.close();
  await tdb?.drop();
  await certs?.remove();
});

describe('API key and mutual TLS against a frontend that requires both', () => {
  let config: Config;
  let gw: InProcessGateway;
  let workers: Workers;

  after(async () => {
    await workers?.stop();
    await gw?.close();
  });

  test('a gateway and a worker fleet with the key from a file run a job through it; a new key in the file is used without a restart', async () => {
    config = testConfig(tdb.url, { ...tlsEnv(), TEMPORAL_API_KEY_FILE: keyFile });
    gw = await startGateway(config, tdb.db);
    workers = await startWorkers(config, tdb.db);
    const tenant = await createTenant(tdb.db);

    const before = proxy.forwarded;
    const first = await createImage(gw.baseUrl, tenant, 'a lighthouse at dusk');
    assert.equal((await jobFinished(tdb.db, first)).status, 'completed');
    assert.ok(proxy.forwarded > before, 'the calls went through the proxy');

    // Rotation: the frontend accepts only the new key from now on; the running processes read it
    // from the file (polled), the gateway's client per call, the workers' connection through setApiKey.
    const refusedBefore = proxy.refused;
    proxy.acceptKeys(['second-key']);
    await writeFile(keyFile, 'second-key\n');
    await waitFor('the gateway client to use the new key', async () => {
      try {
        await gw.client.workflowService.getSystemInfo({});
        return true;
      } catch {
        return false;
      }
    });
    const second = await createImage(gw.baseUrl, tenant, 'a harbour at dawn');
    assert.equal((await jobFinished(tdb.db, second)).status, 'completed');
    // The old key is refused now: the job above ran on the new one, in the same processes.
    await assert.rejects(connectClient(testConfig(tdb.url, { ...tlsEnv(), TEMPORAL_API_KEY: 'first-key' })), /the server refused TEMPORAL_API_KEY/);
    assert.ok(proxy.refused > refusedBefore);
  });

  test('a wrong API key fails at start-up with a clear error, naming where the key came from and not the key', async () => {
    const wrong = 'not-the-key-123';
    for (const connect of [connectClient, connectNative] as const) {
      await assert.rejects(connect({ ...testConfig(tdb.url, { ...tlsEnv(), TEMPORAL_API_KEY: wrong }) }), (err: Error) => {
        assert.match(err.message, new RegExp(`cannot connect to Temporal at ${proxy.address}: the server refused TEMPORAL_API_KEY`));
        assert.ok(!err.message.includes(wrong), 'the key itself is never in the message');
        return true;
      });
    }
  });

  test('a worker with a client certificate the frontend does not trust fails to start, naming the certificate file', async () => {
    const intruder = testConfig(tdb.url, {
      ...tlsEnv(),
      TEMPORAL_TLS_CERT_FILE: certs.file('intruder.pem'),
      TEMPORAL_TLS_KEY_FILE: certs.file('intruder.key'),
      TEMPORAL_API_KEY: 'second-key',
    });
    await assert.rejects(startWorkers(intruder, tdb.db, 'io'), (err: Error) => {
      assert.match(err.message, /the TLS handshake failed or the frontend closed the connection/);
      assert.ok(err.message.includes(certs.file('intruder.pem')), err.message);
      return true;
    });
  });

  test('a server certificate from a CA the client does not trust fails the connection, naming the CA file', async () => {
    const wrongCa = testConfig(tdb.url, { ...tlsEnv(), TEMPORAL_TLS_CA_FILE: certs.file('intruder-ca.pem'), TEMPORAL_API_KEY: 'second-key' });
    for (const connect of [connectClient, connectNative] as const) {
      await assert.rejects(connect(wrongCa), (err: Error) => {
        assert.ok(err.message.includes(certs.file('intruder-ca.pem')), err.message);
        return true;
      });
    }
  });
});
