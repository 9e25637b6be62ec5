// SSRF guard: the address classifier as a pure function over the whole hostile list, then the
// fetcher over the network with loopback targets only. DNS answers come from an injected resolver
// (which names private addresses) and every connection goes through a spy connector that can only
// ever reach 127.0.0.1 — so even a broken guard could not send a packet off this machine.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { fetchRemote, FetchError, isPublicAddress, precheckUrl, type FetchRemoteOptions, type ResolvedAddress } from '../../shared/fetch-remote.js';
import { startHttpsTestServer, type HttpsTestServer } from '../support/https-server.js';

/** Addresses that must never be fetched. */
const hostileAddresses = [
  '127.0.0.1',
  '127.255.255.254',
  '10.0.0.1',
  '10.255.255.255',
  '172.16.0.1',
  '172.31.255.255',
  '192.168.0.1',
  '192.168.255.255',
  '169.254.169.254',
  '169.254.0.1',
  '100.64.0.1',
  '100.127.255.254',
  '0.0.0.0',
  '0.1.2.3',
  '224.0.0.1',
  '239.255.255.250',
  '255.255.255.255',
  '240.0.0.1',
  '198.18.0.1',
  '198.19.255.255',
  '192.0.2.1',
  '198.51.100.7',
  '203.0.113.9',
  '192.0.0.8',
  '::',
  '::1',
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
  '::ffff:10.1.2.3',
  '::ffff:169.254.169.254',
  '::ffff:192.168.1.1',
  '::127.0.0.1',
  'fc00::1',
  'fd12:3456:789a::1',
  'fe80::1',
  'fe80::1%eth0',
  'fec0::1',
  'ff02::1',
  'ff05::1:3',
  '64:ff9b::a00:1',
  '64:ff9b::127.0.0.1',
  '64:ff9b:1::1',
  '2002:c0a8:101::1',
  '2002:7f00:1::1',
  '2001::1',
  '2001:db8::1',
  '3fff::1',
  '100::1',
  'not-an-ip',
  '',
  '1.2.3',
  '1.2.3.4.5',
  '256.1.1.1',
];
const publicAddresses = [
  '93.184.216.34',
  '8.8.8.8',
  '1.1.1.1',
  '172.32.0.1',
  '100.128.0.1',
  '2606:4700:4700::1111',
  '2a00:1450:4001::200e',
  '::ffff:8.8.8.8',
  '64:ff9b::808:808',
  '2002:808:808::1',
];

describe('isPublicAddress (pure)', () => {
  test('refuses every hostile address', () => {
    for (const ip of hostileAddresses) assert.equal(isPublicAddress(ip), false, `${ip} must not be public`);
  });
  test('accepts public unicast addresses', () => {
    for (const ip of publicAddresses) assert.equal(isPublicAddress(ip), true, `${ip} is public`);
  });
});

// ------------------------------------------------------------------------------ network test seams

interface Spy {
  resolved: string[];
  connects: string[];
  opts(extra?: Partial<FetchRemoteOptions>): FetchRemoteOptions;
}

/** DNS from a table (never the real resolver); connections only to 127.0.0.1, everything else blocked and recorded. */
function spy(dnsTable: Record<string, string[]>, base: Partial<FetchRemoteOptions> = {}): Spy {
  const s: Spy = {
    resolved: [],
    connects: [],
    opts: (extra = {}) => ({
      maxBytes: 1024 * 1024,
      connectTimeoutMs: 2_000,
      totalTimeoutMs: 5_000,
      resolver: async (host: string): Promise<ResolvedAddress[]> => {
        s.resolved.push(host);
        const answer = dnsTable[host];
        if (!answer) throw Object.assign(new Error(`test DNS: ${host} unknown`), { code: 'ENOTFOUND' });
        return answer.map((address) => ({ address, family: net.isIP(address) }));
      },
      connect: (o: tls.ConnectionOptions) => {
        s.connects.push(String(o.host));
        if (o.host === '127.0.0.1') return tls.connect(o);
        const blocked = new net.Socket();
        setImmediate(() => blocked.destroy(Object.assign(new Error('test connector: off-loopback connection blocked'), { code: 'ETESTBLOCKED' })));
        return blocked;
      },
      ...base,
      ...extra,
    }),
  };
  return s;
}

async function refusal(p: Promise<unknown>): Promise<FetchError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof FetchError, `expected a FetchError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the fetch to be refused');
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const hostileDns: Record<string, string[]> = {
  localhost: ['127.0.0.1', '::1'],
  'loopback.evil.test': ['127.0.0.1'],
  'metadata.google.internal': ['169.254.169.254'],
  'metadata.evil.test': ['fd00:ec2::254'],
  'rebind.evil.test': ['93.184.216.34', '10.0.0.5'], // one public, one private: every address counts
  'v6.evil.test': ['fc00::5'],
  'mapped.evil.test': ['::ffff:192.168.0.1'],
  'cgnat.evil.test': ['100.64.1.1'],
  'public.example': ['93.184.216.34'],
};

const hostileUrls: Array<{ url: string; why: string }> = [
  { url: 'https://127.0.0.1/', why: 'loopback literal' },
  { url: 'https://localhost/', why: 'localhost name' },
  { url: 'https://loopback.evil.test/', why: 'DNS name resolving to 127.0.0.1' },
  { url: 'https://10.0.0.1/', why: 'private 10/8' },
  { url: 'https://172.16.5.4/', why: 'private 172.16/12' },
  { url: 'https://192.168.1.1/', why: 'private 192.168/16' },
  { url: 'https://169.254.169.254/latest/meta-data/', why: 'metadata endpoint' },
  { url: 'https://metadata.google.internal/computeMetadata/v1/', why: 'metadata name' },
  { url: 'https://metadata.evil.test/', why: 'IPv6 metadata (ULA)' },
  { url: 'https://100.64.0.1/', why: 'CGNAT' },
  { url: 'https://cgnat.evil.test/', why: 'name resolving to CGNAT' },
  { url: 'https://0.0.0.0/', why: 'unspecified' },
  { url: 'https://[::1]/', why: 'IPv6 loopback' },
  { url: 'https://[::]/', why: 'IPv6 unspecified' },
  { url: 'https://[::ffff:127.0.0.1]/', why: 'IPv4-mapped loopback' },
  { url: 'https://[::ffff:169.254.169.254]/', why: 'IPv4-mapped metadata' },
  { url: 'https://mapped.evil.test/', why: 'name resolving to IPv4-mapped private' },
  { url: 'https://[fd00::1]/', why: 'IPv6 ULA' },
  { url: 'https://[fe80::1]/', why: 'IPv6 link-local' },
  { url: 'https://v6.evil.test/', why: 'name resolving to ULA' },
  { url: 'https://224.0.0.1/', why: 'multicast' },
  { url: 'https://255.255.255.255/', why: 'broadcast' },
  { url: 'https://240.0.0.1/', why: 'reserved' },
  { url: 'https://198.18.0.1/', why: 'benchmarking' },
  { url: 'https://2130706433/', why: 'decimal 127.0.0.1' },
  { url: 'https://0x7f.0.0.1/', why: 'hex 127.0.0.1' },
  { url: 'https://[64:ff9b::a00:1]/', why: 'NAT64 of 10.0.0.1' },
  { url: 'https://[2002:c0a8:101::1]/', why: '6to4 of 192.168.1.1' },
  { url: 'https://rebind.evil.test/', why: 'one private address among public ones' },
  { url: 'http://public.example/', why: 'plain http' },
  { url: 'ftp://public.example/', why: 'other scheme' },
  { url: 'file:///etc/passwd', why: 'file scheme' },
  { url: 'https://user:secret@public.example/', why: 'credentials' },
  { url: 'https://public.example:8443/', why: 'non-default port' },
  { url: 'https://public.example:22/', why: 'ssh port' },
  { url: 'not a url', why: 'garbage' },
];

describe('fetchRemote refuses hostile targets before connecting', () => {
  for (const { url, why } of hostileUrls) {
    test(`${why}: ${url}`, async () => {
      const s = spy(hostileDns);
      const err = await refusal(fetchRemote(url, s.opts()));
      assert.equal(err.kind, 'refused', err.message);
      assert.deepEqual(s.connects, [], 'no connection may be attempted');
    });
  }

  test('a name that does not resolve and one that resolves to a private address get the same answer', async () => {
    const s = spy({ 'internal.evil.test': ['10.0.0.7'] });
    const privateName = await refusal(fetchRemote('https://internal.evil.test/a.png', s.opts()));
    const unknownName = await refusal(fetchRemote('https://nowhere.evil.test/a.png', s.opts()));
    assert.deepEqual([privateName.kind, unknownName.kind], ['refused', 'refused']);
    assert.equal(privateName.message.replace('internal.evil.test', 'HOST'), unknownName.message.replace('nowhere.evil.test', 'HOST'));
    assert.doesNotMatch(privateName.message, /10\.0\.0\.7|resolve[sd]? to an address/);
    assert.deepEqual(s.connects, []);
  });

  test('the allowed loopback test origin does not open other loopback ports or names', async () => {
    const s = spy(hostileDns, { allowLoopbackOrigin: 'https://127.0.0.1:4443' });
    for (const url of ['https://127.0.0.1:4444/', 'https://localhost:4443/', 'https://loopback.evil.test:4443/', 'https://127.0.0.1/']) {
      const err = await refusal(fetchRemote(url, s.opts()));
      assert.equal(err.kind, 'refused', url);
    }
    assert.deepEqual(s.connects, []);
  });

  test('precheckUrl (used by the gateway) refuses literal and scheme problems without DNS', () => {
    for (const url of ['http://x.example/', 'https://10.1.1.1/', 'https://[::ffff:10.0.0.1]/', 'https://a:b@x.example/', 'https://x.example:444/']) {
      assert.throws(() => precheckUrl(url), FetchError, url);
    }
    assert.equal(precheckUrl('https://x.example/a.png').hostname, 'x.example');
  });
});

describe('fetchRemote against a loopback HTTPS server', () => {
  let server: HttpsTestServer;
  const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(2000, 7)]);

  before(async () => {
    server = await startHttpsTestServer();
    server.file('/a.png', png, 'image/png');
    server.route('/hop1', (_q, r) => r.writeHead(302, { location: '/hop2' }).end());
    server.route('/hop2', (_q, r) => r.writeHead(301, { location: `${server.origin}/a.png` }).end());
    for (let i = 0; i < 5; i++) server.route(`/loop${i}`, (_q, r) => r.writeHead(307, { location: `/loop${i + 1}` }).end());
    server.route('/to-private', (_q, r) => r.writeHead(302, { location: 'https://10.0.0.7/secret' }).end());
    server.route('/to-metadata-name', (_q, r) => r.writeHead(302, { location: 'https://metadata.google.internal/computeMetadata/v1/' }).end());
    server.route('/to-mapped', (_q, r) => r.writeHead(302, { location: 'https://[::ffff:192.168.0.1]/' }).end());
    server.route('/to-http', (_q, r) => r.writeHead(302, { location: `http://127.0.0.1:${server.port}/a.png` }).end());
    server.route('/to-other-port', (_q, r) => r.writeHead(302, { location: `https://127.0.0.1:${server.port + 1}/a.png` }).end());
    server.route('/slow', (_q, r) => {
      r.writeHead(200, { 'content-type': 'image/png' });
      r.write(png.subarray(0, 16)); // then nothing: the total timeout must end it
    });
    server.route('/endless', (_q, r) => {
      r.writeHead(200, { 'content-type': 'image/png' }); // chunked, no length: the cap must hold mid-stream
      const chunk = Buffer.alloc(64 * 1024, 1);
      const pump = () => {
        while (!r.destroyed && r.write(chunk));
        if (!r.destroyed) r.once('drain', pump);
      };
      pump();
    });
    server.route('/declared-huge', (_q, r) => {
      r.writeHead(200, { 'content-type': 'image/png', 'content-length': String(50 * 1024 * 1024) });
      r.write(png.subarray(0, 16));
    });
    server.route('/gone', (_q, r) => r.writeHead(404).end());
    server.route('/busy', (_q, r) => r.writeHead(503).end());
  });
  after(async () => {
    await server.close();
  });

  const allowed = () => ({ allowLoopbackOrigin: server.origin, ca: server.ca });

  test('fetches from the opt-in loopback origin, pinned to the checked address', async () => {
    const s = spy(hostileDns);
    const r = await fetchRemote(`${server.origin}/a.png`, s.opts(allowed()));
    assert.deepEqual(await readAll(r.stream), png);
    assert.equal(r.contentTypeHint, 'image/png');
    assert.deepEqual(s.connects, ['127.0.0.1']);
    assert.deepEqual(s.resolved, [], 'an IP literal needs no DNS');
  });

  test('without the opt-in the same loopback URL is refused and the server sees no connection', async () => {
    const before = server.connections();
    const s = spy(hostileDns);
    const err = await refusal(fetchRemote(`${server.origin}/a.png`, s.opts({ ca: server.ca })));
    assert.equal(err.kind, 'refused');
    assert.equal(server.connections(), before);
    assert.deepEqual(s.connects, []);
  });

  test('the self-signed certificate is not trusted without the test CA', async () => {
    const err = await refusal(fetchRemote(`${server.origin}/a.png`, spy(hostileDns).opts({ allowLoopbackOrigin: server.origin })));
    assert.equal(err.kind, 'failed');
    assert.match(err.message, /TLS/);
  });

  test('follows same-origin redirects (2 hops)', async () => {
    const r = await fetchRemote(`${server.origin}/hop1`, spy(hostileDns).opts(allowed()));
    assert.deepEqual(await readAll(r.stream), png);
    assert.equal(r.finalUrl, `${server.origin}/a.png`);
  });

  test('more than 3 redirects are refused', async () => {
    const err = await refusal(fetchRemote(`${server.origin}/loop0`, spy(hostileDns).opts(allowed())));
    assert.equal(err.kind, 'failed');
    assert.match(err.message, /redirects/);
  });

  for (const [path, why] of [
    ['/to-private', 'a private address literal'],
    ['/to-metadata-name', 'a name resolving to the metadata address'],
    ['/to-mapped', 'an IPv4-mapped private address'],
    ['/to-http', 'plain http'],
    ['/to-other-port', 'another loopback port'],
  ] as const) {
    test(`a redirect to ${why} is refused before connecting`, async () => {
      const s = spy(hostileDns);
      const err = await refusal(fetchRemote(`${server.origin}${path}`, s.opts(allowed())));
      assert.equal(err.kind, 'refused', err.message);
      assert.deepEqual(s.connects, ['127.0.0.1'], 'only the first, allowed hop connects');
    });
  }

  test('a slow body ends with the total timeout', async () => {
    const r = await fetchRemote(`${server.origin}/slow`, spy(hostileDns).opts({ ...allowed(), totalTimeoutMs: 400 }));
    const err = await refusal(readAll(r.stream));
    assert.equal(err.kind, 'failed');
    assert.match(err.message, /longer than 400 ms/);
  });

  test('the byte cap holds mid-stream on a body without Content-Length', async () => {
    const r = await fetchRemote(`${server.origin}/endless`, spy(hostileDns).opts({ ...allowed(), maxBytes: 300_000 }));
    const err = await refusal(readAll(r.stream));
    assert.equal(err.kind, 'too_large');
  });

  test('a declared Content-Length over the cap is refused before reading the body', async () => {
    const err = await refusal(fetchRemote(`${server.origin}/declared-huge`, spy(hostileDns).opts(allowed())));
    assert.equal(err.kind, 'too_large');
  });

  test('4xx is final, 5xx is transient', async () => {
    assert.equal((await refusal(fetchRemote(`${server.origin}/gone`, spy(hostileDns).opts(allowed())))).kind, 'failed');
    assert.equal((await refusal(fetchRemote(`${server.origin}/busy`, spy(hostileDns).opts(allowed())))).kind, 'unavailable');
  });

  test('a TLS handshake that never completes ends with the connect timeout (transient)', async () => {
    // A loopback TCP server that accepts and never answers the TLS hello.
    const sockets: net.Socket[] = [];
    const silent = net.createServer((sock) => sockets.push(sock));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentPort = (silent.address() as net.AddressInfo).port;
    try {
      const err = await refusal(
        fetchRemote(`${server.origin}/a.png`, {
          ...spy(hostileDns).opts(allowed()),
          connectTimeoutMs: 200,
          connect: (o) => tls.connect({ ...o, host: '127.0.0.1', port: silentPort }),
        }),
      );
      assert.equal(err.kind, 'unavailable');
      assert.match(err.message, /connect timed out/);
    } finally {
      for (const sock of sockets) sock.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
