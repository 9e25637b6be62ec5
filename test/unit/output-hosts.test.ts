// Provider output allow-lists as pure functions: each provider's own hosts (from its registry entry),
// the operator's extra hosts per provider, and the hosts a provider's key may go to. No request is made.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hostMatches, urlMatches } from '../../activities/providers/hosts.js';
import { extraOutputHosts, outputHostsFor, providerOutputHosts } from '../../activities/providers/outputs.js';
import { providerRegistry } from '../../activities/providers/registry.js';
import { falOutputHeaders } from '../../providers/fal/adapter.js';
import { createGoogleAdapter } from '../../providers/google/adapter.js';
import { providerNames } from '../../workflows/definitions.js';

const allowed = (provider: (typeof providerNames)[number], host: string, extra?: string) =>
  hostMatches(host, outputHostsFor(provider, { PROVIDER_OUTPUT_HOSTS: extra }));

describe('each provider fetches outputs from its own hosts only', () => {
  test('fal: its CDN hosts, exactly; no shared bucket host and no other fal-looking name', () => {
    assert.deepEqual(providerOutputHosts('fal'), [
      'v3.fal.media',
      'v3b.fal.media',
      'v3c.fal.media',
      'fal.media',
      'v2.fal.media',
      'storage.googleapis.com/falserverless/',
    ]);
    for (const host of ['v3.fal.media', 'v3b.fal.media', 'v3c.fal.media', 'fal.media', 'V3.FAL.MEDIA.']) assert.ok(allowed('fal', host), host);
    for (const host of ['storage.googleapis.com', 'evil.fal.media', 'evilfal.media', 'fal.media.example.com', 'fal.run', 'queue.fal.run', 'v3d.fal.media'])
      assert.ok(!allowed('fal', host), host);
  });

  test("fal: on Google's shared storage host, only fal's own bucket path", () => {
    const fal = outputHostsFor('fal', { PROVIDER_OUTPUT_HOSTS: undefined });
    const ok = (u: string) => urlMatches(new URL(u), fal);
    for (const u of [
      'https://v3c.fal.media/files/monkey/abc.mp4',
      'https://storage.googleapis.com/falserverless/example_outputs/a.png',
      'https://STORAGE.googleapis.com/falserverless/gallery/b.mp4',
    ])
      assert.ok(ok(u), u);
    for (const u of [
      'https://storage.googleapis.com/attacker-bucket/a.png',
      'https://storage.googleapis.com/falserverless-evil/a.png',
      'https://storage.googleapis.com/falserverless',
      'https://storage.googleapis.com/falserverless/../attacker/a.png',
      'https://storage.googleapis.com/falserverless/%2e%2e/attacker/a.png',
      'https://storage.googleapis.com/x/falserverless/a.png',
      'https://falserverless.storage.googleapis.com/a.png',
      'https://storage.googleapis.com.example.com/falserverless/a.png',
    ])
      assert.ok(!ok(u), u);
    // A path pattern never allows its host outright (the host check alone, as a redirect hop sees it first).
    assert.ok(!hostMatches('storage.googleapis.com', fal));
    // The operator's extra patterns take a path prefix too, for their provider only.
    const extra = outputHostsFor('google', { PROVIDER_OUTPUT_HOSTS: 'google=storage.googleapis.com/my-veo-bucket/' });
    assert.ok(urlMatches(new URL('https://storage.googleapis.com/my-veo-bucket/v.mp4'), extra));
    assert.ok(!urlMatches(new URL('https://storage.googleapis.com/other/v.mp4'), extra));
  });

  test('Alibaba and BytePlus: their own result buckets, not any bucket of the same cloud', () => {
    for (const host of [
      'dashscope-result-bj.oss-cn-beijing.aliyuncs.com',
      'dashscope-result-sh.oss-accelerate.aliyuncs.com',
      'dashscope-result-wlcb-acdr-1.oss-cn-wulanchabu-acdr-1.aliyuncs.com',
    ]) {
      assert.ok(allowed('alibaba', host), host);
    }
    for (const host of [
      'attacker.oss-cn-beijing.aliyuncs.com',
      'dashscope-result-bj.evil.oss-cn-beijing.aliyuncs.com',
      'dashscope-intl.aliyuncs.com',
      'dashscope-result-bj.oss-cn-beijing.aliyuncs.com.example.org',
    ]) {
      assert.ok(!allowed('alibaba', host), host);
    }
    assert.ok(allowed('byteplus', 'ark-content-generation-v2-ap-southeast-1.tos-ap-southeast-1.bytepluses.com'));
    for (const host of ['ark-doc.tos-ap-southeast-1.bytepluses.com', 'someone.tos-ap-southeast-1.bytepluses.com', 'ark.ap-southeast.bytepluses.com'])
      assert.ok(!allowed('byteplus', host), host);
  });

  test('xAI, Google: exact hosts; OpenAI, Azure and the local renderer: none', () => {
    assert.ok(allowed('xai', 'vidgen.x.ai'));
    assert.ok(!allowed('xai', 'x.ai.example.com'));
    assert.ok(allowed('google', 'generativelanguage.googleapis.com'));
    assert.ok(!allowed('google', 'storage.googleapis.com'));
    for (const p of ['openai', 'azure', 'local'] as const) assert.deepEqual(providerOutputHosts(p), []);
  });

  test('no provider allows a whole shared cloud (a bare wildcard over a public storage or cloud domain)', () => {
    const shared = ['aliyuncs.com', 'bytepluses.com', 'googleapis.com', 'amazonaws.com', 'volces.com'];
    for (const [name, entry] of Object.entries(providerRegistry)) {
      for (const pattern of entry.outputHosts.hosts) {
        assert.ok(!shared.some((d) => pattern === `*.${d}` || pattern === d), `${name}: ${pattern}`);
        assert.notEqual(pattern, 'storage.googleapis.com', `${name}: any bucket of Google Cloud Storage`);
        if (pattern.includes('/')) assert.match(pattern, /^[a-z0-9.-]+\/[a-z0-9-]+\/$/, `${name}: a path pattern names one bucket: ${pattern}`);
      }
    }
  });
});

describe("the operator's extra hosts apply to the provider they name", () => {
  const value = 'google=video-downloads.googleusercontent.com; byteplus=my-mirror.example.com,*.cdn.example.net';
  test('per provider', () => {
    assert.deepEqual(extraOutputHosts(value, 'google'), ['video-downloads.googleusercontent.com']);
    assert.deepEqual(extraOutputHosts(value, 'byteplus'), ['my-mirror.example.com', '*.cdn.example.net']);
    assert.deepEqual(extraOutputHosts(value, 'fal'), []);
    assert.ok(allowed('google', 'video-downloads.googleusercontent.com', value));
    assert.ok(!allowed('fal', 'video-downloads.googleusercontent.com', value), "another provider's extra host is not fal's");
    assert.ok(allowed('byteplus', 'a.cdn.example.net', value));
  });

  test('a bare list (the older form) still applies to every provider', () => {
    for (const p of providerNames) assert.deepEqual(extraOutputHosts('127.0.0.1', p), ['127.0.0.1']);
  });
});

describe("a provider key goes only to that provider's own key-bearing hosts", () => {
  const cfg = { key: 'fal-key-123456', cdnRequiresKey: true };
  test('fal: the CDN v3 hosts over https, never an extra host, a look-alike or another provider', () => {
    assert.deepEqual(providerRegistry.fal.outputHosts.keyHosts, ['v3.fal.media', 'v3b.fal.media']);
    for (const url of ['https://v3.fal.media/files/a.png', 'https://v3b.fal.media/files/a.png'])
      assert.deepEqual(falOutputHeaders(cfg, { url }), { authorization: 'Key fal-key-123456' }, url);
    for (const url of [
      'https://storage.googleapis.com/falserverless/a.png',
      'https://fal.media/files/a.png',
      'https://evil.v3.fal.media/a.png',
      'https://v3.fal.media.example.com/a.png',
      'http://v3.fal.media/a.png',
      'https://video-downloads.googleusercontent.com/a.mp4',
      'https://dashscope-result-bj.oss-cn-beijing.aliyuncs.com/a.mp4',
    ]) {
      assert.deepEqual(falOutputHeaders(cfg, { url }), {}, url);
    }
    assert.deepEqual(falOutputHeaders({ ...cfg, cdnRequiresKey: false }, { url: 'https://v3.fal.media/a.png' }), {});
  });

  test("Google's key goes to its API origin only; no other provider sends a key with a download", () => {
    const google = createGoogleAdapter({ key: 'g-key', baseUrl: 'https://generativelanguage.googleapis.com' });
    assert.deepEqual(google.outputHeaders!({ url: 'https://generativelanguage.googleapis.com/v1beta/files/x:download?alt=media' }), {
      'x-goog-api-key': 'g-key',
    });
    assert.deepEqual(google.outputHeaders!({ url: 'https://video-downloads.googleusercontent.com/x' }), {});
    for (const [name, entry] of Object.entries(providerRegistry)) {
      if (name !== 'fal' && name !== 'elevenlabs' && name !== 'google') assert.deepEqual(entry.outputHosts.keyHosts, [], name);
      for (const host of entry.outputHosts.keyHosts)
        assert.ok(hostMatches(host, entry.outputHosts.hosts), `${name}: a key host is one of its own output hosts`);
    }
  });
});
