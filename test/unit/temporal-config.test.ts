// shared/config/temporal.ts: the Temporal TLS and API-key settings. Each refused combination is
// one line naming the variable and the file; no line carries key material.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { ConfigError, loadConfig } from '../../shared/config.js';
import { temporalSecurity } from '../../shared/config/temporal.js';
import { explainConnectFailure } from '../../shared/temporal-connection.js';
import { makeCerts, type CertSet } from '../support/prod-certs.js';

const base = {
  DATABASE_URL: 'postgres://media@127.0.0.1:5432/media',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  S3_ENDPOINT: 'http://127.0.0.1:9000',
  S3_ACCESS_KEY: 'media',
  S3_SECRET_KEY: 'not-a-real-secret',
};

let certs: CertSet;
before(async () => {
  certs = await makeCerts();
});
after(() => certs?.remove());

/** The configuration error's lines for `env` (each refusal is one). */
function refusal(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...base, ...env });
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message.split('\n').slice(1);
  }
  assert.fail('the configuration was accepted');
}

describe('Temporal TLS settings', () => {
  test('nothing set: plain connection, no API key', () => {
    const s = temporalSecurity(loadConfig(base));
    assert.equal(s.tls, false);
    assert.equal(s.apiKey, undefined);
  });

  test('a CA, a matching client pair and a server name become the SDK options; TLS is implied', async () => {
    const c = loadConfig({
      ...base,
      TEMPORAL_TLS_CA_FILE: certs.file('ca.pem'),
      TEMPORAL_TLS_CERT_FILE: certs.file('client.pem'),
      TEMPORAL_TLS_KEY_FILE: certs.file('client.key'),
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
    });
    const { tls } = temporalSecurity(c);
    assert.ok(tls);
    assert.deepEqual(tls.serverRootCACertificate, await readFile(certs.file('ca.pem')));
    assert.deepEqual(tls.clientCertPair?.crt, await readFile(certs.file('client.pem')));
    assert.deepEqual(tls.clientCertPair?.key, await readFile(certs.file('client.key')));
    assert.equal(tls.serverNameOverride, 'localhost');
  });

  test('TEMPORAL_TLS=true alone: TLS with the system roots; an API key implies TLS unless TEMPORAL_TLS=false', () => {
    assert.deepEqual(temporalSecurity(loadConfig({ ...base, TEMPORAL_TLS: 'true' })).tls, {});
    assert.deepEqual(temporalSecurity(loadConfig({ ...base, TEMPORAL_API_KEY: 'k' })).tls, {});
    assert.equal(temporalSecurity(loadConfig({ ...base, TEMPORAL_API_KEY: 'k', TEMPORAL_TLS: 'false' })).tls, false);
  });

  test('a certificate without its key, and a key without its certificate, are refused', () => {
    assert.deepEqual(refusal({ TEMPORAL_TLS_CERT_FILE: certs.file('client.pem') }), [
      '  TEMPORAL_TLS_CERT_FILE: set without TEMPORAL_TLS_KEY_FILE (a client certificate needs its private key)',
    ]);
    assert.deepEqual(refusal({ TEMPORAL_TLS_KEY_FILE: certs.file('client.key') }), [
      '  TEMPORAL_TLS_KEY_FILE: set without TEMPORAL_TLS_CERT_FILE (a private key needs its client certificate)',
    ]);
  });

  test('an API key both inline and from a file is refused', async () => {
    const file = certs.file('api-key');
    await writeFile(file, 'from-file\n');
    assert.deepEqual(refusal({ TEMPORAL_API_KEY: 'inline', TEMPORAL_API_KEY_FILE: file }), [
      '  TEMPORAL_API_KEY: set together with TEMPORAL_API_KEY_FILE; use one of them',
    ]);
  });

  test('a missing or unreadable file is named with its variable', async (t) => {
    const missing = certs.file('nope.pem');
    assert.deepEqual(refusal({ TEMPORAL_TLS_CA_FILE: missing }), [`  TEMPORAL_TLS_CA_FILE: the file ${missing} does not exist`]);
    assert.deepEqual(refusal({ TEMPORAL_API_KEY_FILE: missing }), [`  TEMPORAL_API_KEY_FILE: the file ${missing} does not exist`]);
    if (process.getuid?.() === 0) return t.skip('root reads any file: the permission case cannot fail here');
    const locked = certs.file('locked.key');
    await writeFile(locked, await readFile(certs.file('client.key')));
    await chmod(locked, 0o000);
    assert.deepEqual(refusal({ TEMPORAL_TLS_CERT_FILE: certs.file('client.pem'), TEMPORAL_TLS_KEY_FILE: locked }), [
      `  TEMPORAL_TLS_KEY_FILE: the file ${locked} is not readable (permission denied)`,
    ]);
  });

  test('a certificate and a key that do not belong together are refused, naming both files, without key material', async () => {
    const lines = refusal({ TEMPORAL_TLS_CERT_FILE: certs.file('client.pem'), TEMPORAL_TLS_KEY_FILE: certs.file('intruder.key') });
    assert.deepEqual(lines, [
      `  TEMPORAL_TLS_CERT_FILE, TEMPORAL_TLS_KEY_FILE: the certificate ${certs.file('client.pem')} and the key ${certs.file('intruder.key')} do not belong together`,
    ]);
    const keyBody = (await readFile(certs.file('intruder.key'), 'utf8')).split('\n')[1]!;
    assert.ok(!lines.join('\n').includes(keyBody));
  });

  test('a CA file that is not PEM is refused; so is an empty API key file', async () => {
    const notPem = certs.file('ca.der');
    await writeFile(notPem, Buffer.from([0x30, 0x82, 0x01, 0x0a, 0x02]));
    assert.deepEqual(refusal({ TEMPORAL_TLS_CA_FILE: notPem }), [`  TEMPORAL_TLS_CA_FILE: the file ${notPem} holds no PEM certificate`]);
    const empty = certs.file('empty-key');
    await writeFile(empty, '  \n');
    assert.deepEqual(refusal({ TEMPORAL_API_KEY_FILE: empty }), [`  TEMPORAL_API_KEY_FILE: the file ${empty} is empty`]);
  });

  test('TEMPORAL_TLS=false with TLS files is refused, one line per problem', () => {
    const lines = refusal({ TEMPORAL_TLS: 'false', TEMPORAL_TLS_CA_FILE: certs.file('ca.pem'), TEMPORAL_TLS_SERVER_NAME: 'localhost' });
    assert.deepEqual(lines, [
      '  TEMPORAL_TLS: false, yet TEMPORAL_TLS_CA_FILE set (TLS files need TLS)',
      '  TEMPORAL_TLS: false, yet TEMPORAL_TLS_SERVER_NAME set (a server name is a TLS setting)',
    ]);
  });

  test('an inline API key never appears in an error', () => {
    const lines = refusal({ TEMPORAL_API_KEY: 'sekrit-key-value', TEMPORAL_TLS_CERT_FILE: certs.file('client.pem') });
    assert.ok(!lines.join('\n').includes('sekrit-key-value'));
  });
});

describe('connect failures over TLS', () => {
  // What the Rust core said when the frontend refused the client certificate (TLS 1.3: after the handshake).
  const refusals = [
    `Failed to call GetSystemInfo: code: 'The operation was cancelled', message: "operation was canceled", source: tonic::transport::Error(Transport, hyper::Error(Canceled, "connection closed"))`,
    `Failed to call GetSystemInfo: code: 'The operation was cancelled', message: "operation was canceled", source: tonic::transport::Error(Transport, hyper::Error(Canceled, "connection was not ready"))`,
    `Failed to call GetSystemInfo: code: 'Unknown error', message: "transport error", source: tonic::transport::Error(Transport, hyper::Error(Io, Os { code: 104, kind: ConnectionReset, message: "Connection reset by peer" }))`,
    `Failed to call GetSystemInfo: code: 'Unknown error', message: "transport error", source: tonic::transport::Error(Transport, hyper::Error(Io, Custom { kind: BrokenPipe, error: "stream closed because of a broken pipe" }))`,
  ];
  for (const cause of refusals) {
    test(`a refused client certificate is told as a TLS failure naming the files: ${cause.slice(-40)}`, () => {
      const c = loadConfig({
        ...base,
        TEMPORAL_TLS_CERT_FILE: certs.file('intruder.pem'),
        TEMPORAL_TLS_KEY_FILE: certs.file('intruder.key'),
        TEMPORAL_TLS_CA_FILE: certs.file('ca.pem'),
      });
      const message = explainConnectFailure(c, temporalSecurity(c), new Error(cause)).message;
      assert.match(message, /the TLS handshake failed or the frontend closed the connection/);
      assert.ok(message.includes(certs.file('intruder.pem')) && message.includes('TEMPORAL_TLS_CERT_FILE'), message);
    });
  }

  test('a refused connection without TLS is not called a TLS failure', () => {
    const c = loadConfig(base);
    const message = explainConnectFailure(c, temporalSecurity(c), new Error('connect ECONNREFUSED 127.0.0.1:7233')).message;
    assert.doesNotMatch(message, /TLS/);
  });
});
