// Scoped API keys (docs/api/api-keys.md): every endpoint declares the scope a key needs, in its one
// declaration (api/operations.ts), and the document states it; the rules' pure parts (CIDRs, the
// scope, address and create checks, a minted key's rules within the minting key's).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { allOperations, buildOpenApiDocument } from '../../api/openapi.js';
import {
  addressRefusal,
  apiKeyScopes,
  cidrContains,
  createRefusalOf,
  NO_RULES,
  parseCidr,
  rulesOf,
  scopeRefusal,
  type KeyRules,
} from '../../shared/api-key-rules.js';
import { rulesWithin } from '../../api/routes/api-keys.js';
import { ApiError } from '../../api/errors.js';

describe('every endpoint declares its scope', () => {
  const ops = allOperations();

  test('each authenticated operation names one of the scopes; only the unauthenticated ones name none', () => {
    const missing = ops.filter((op) => op.scope === undefined || (op.rateClass !== null && op.scope === null));
    assert.deepEqual(
      missing.map((op) => `${op.method.toUpperCase()} ${op.path}`),
      [],
      'an endpoint without a scope: declare `scope` in its Endpoints.add (api/operations.ts)',
    );
    for (const op of ops) {
      if (op.scope !== null) assert.ok(apiKeyScopes.includes(op.scope), `${op.method} ${op.path}: unknown scope ${String(op.scope)}`);
      if (op.rateClass === null) assert.equal(op.scope, null, `${op.method} ${op.path} is unauthenticated: its scope is null`);
    }
  });

  test('reads need read; every write needs another scope', () => {
    for (const op of ops.filter((o) => o.scope !== null)) {
      if (op.method === 'get' && !op.path.startsWith('/v1/api-keys')) assert.equal(op.scope, 'read', `GET ${op.path}`);
      if (op.method !== 'get') assert.notEqual(op.scope, 'read', `${op.method} ${op.path}`);
    }
  });

  test('the document states each operation scope as its bearerAuth role and as x-scope', () => {
    const doc = buildOpenApiDocument(ops) as {
      paths: Record<string, Record<string, { security: unknown; 'x-scope'?: string; responses: Record<string, unknown> }>>;
    };
    let scoped = 0;
    for (const op of ops.filter((o) => o.scope !== null)) {
      const path = op.path.replace(/:(\w+)/g, '{$1}');
      const documented = doc.paths[path]![op.method]!;
      assert.deepEqual(documented.security, [{ bearerAuth: [op.scope] }], `${op.method} ${op.path}`);
      assert.equal(documented['x-scope'], op.scope);
      assert.ok(documented.responses['403'], `${op.method} ${op.path} documents 403 key_scope_denied`);
      scoped++;
    }
    assert.ok(scoped > 30);
  });
});

describe('CIDRs', () => {
  test('parse and canonicalize (host bits cleared), refuse malformed ones', () => {
    assert.equal(parseCidr('127.0.0.1/8')?.text, '127.0.0.0/8');
    assert.equal(parseCidr('10.1.2.3')?.text, '10.1.2.3/32');
    assert.equal(parseCidr('2001:db8::1/32')?.text, '2001:db8::/32');
    assert.equal(parseCidr('::1')?.text, '::1/128');
    assert.equal(parseCidr('::ffff:127.0.0.1')?.text, '127.0.0.1/32');
    for (const bad of ['', '300.1.1.1/8', '10.0.0.0/33', '10.0.0.0/8/1', 'example.test', '::1/129', '10.0.0.0/-1']) assert.equal(parseCidr(bad), null, bad);
  });

  test('containment by family and prefix', () => {
    const loop = parseCidr('127.0.0.0/8')!;
    assert.ok(cidrContains(loop, parseCidr('127.0.0.1')!));
    assert.ok(cidrContains(loop, parseCidr('127.1.0.0/16')!));
    assert.ok(!cidrContains(loop, parseCidr('128.0.0.1')!));
    assert.ok(!cidrContains(parseCidr('127.1.0.0/16')!, parseCidr('127.0.0.0/8')!));
    assert.ok(!cidrContains(loop, parseCidr('::1')!));
    assert.ok(cidrContains(parseCidr('0.0.0.0/0')!, parseCidr('8.8.8.8')!));
    assert.ok(cidrContains(parseCidr('fd00::/8')!, parseCidr('fd12:3456::1')!));
  });
});

describe('a key refused by its rules', () => {
  const rules: KeyRules = rulesOf({
    scopes: ['read'],
    allowed_models: ['flux-schnell'],
    allowed_kinds: ['image'],
    allowed_ips: ['192.0.2.0/24'],
    expires_at: null,
  });

  test('a key without rules is refused nothing', () => {
    assert.equal(rulesOf({ scopes: null, allowed_models: null, allowed_kinds: null, allowed_ips: null, expires_at: null }), NO_RULES);
    assert.equal(scopeRefusal(NO_RULES, 'admin'), null);
    assert.equal(addressRefusal(NO_RULES, undefined), null);
    assert.equal(createRefusalOf(NO_RULES, 'video', 'anything'), null);
  });

  test('names the scope it lacks, the address rule and the create rules', () => {
    assert.equal(scopeRefusal(rules, 'read'), null);
    assert.equal(scopeRefusal(rules, 'generate')?.rule, 'generate');
    assert.equal(addressRefusal(rules, '192.0.2.7'), null);
    assert.equal(addressRefusal(rules, '::ffff:192.0.2.7'), null);
    assert.equal(addressRefusal(rules, '127.0.0.1')?.rule, 'allowed_ips');
    assert.equal(addressRefusal(rules, undefined)?.rule, 'allowed_ips');
    assert.equal(createRefusalOf(rules, 'image', 'flux-schnell'), null);
    assert.equal(createRefusalOf(rules, 'image', 'other-model')?.rule, 'allowed_models');
    assert.equal(createRefusalOf(rules, 'video', 'flux-schnell')?.rule, 'allowed_kinds');
  });
});

describe('a minted key has no more than the minting key', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  const held = rulesOf({
    scopes: ['read', 'admin'],
    allowed_models: null,
    allowed_kinds: ['image', 'video'],
    allowed_ips: ['10.0.0.0/8'],
    expires_at: new Date('2026-06-01T00:00:00Z'),
  });
  const refusedWith = (rule: string) => (err: unknown) =>
    err instanceof ApiError && err.status === 403 && err.code === 'key_scope_denied' && err.extra.rule === rule;

  test('inherits the rules it leaves out, keeps the narrower ones it names', () => {
    const r = rulesWithin({ name: 'n', scopes: ['read'], allowed_ips: ['10.1.0.0/16'] }, held, now);
    assert.deepEqual(r.scopes, ['read']);
    assert.deepEqual(r.allowedKinds, ['image', 'video']);
    assert.deepEqual(r.allowedIps, ['10.1.0.0/16']);
    assert.equal(r.allowedModels, null);
    assert.equal(r.expiresAt?.toISOString(), '2026-06-01T00:00:00.000Z');
  });

  test('refuses each widening, naming the scope or rule', () => {
    assert.throws(() => rulesWithin({ name: 'n', scopes: ['read', 'generate'] }, held, now), refusedWith('generate'));
    assert.throws(() => rulesWithin({ name: 'n', scopes: ['read'], allowed_kinds: ['talking_actor'] }, held, now), refusedWith('allowed_kinds'));
    assert.throws(() => rulesWithin({ name: 'n', scopes: ['read'], allowed_ips: ['0.0.0.0/0'] }, held, now), refusedWith('allowed_ips'));
    assert.throws(() => rulesWithin({ name: 'n', scopes: ['read'], expires_at: '2027-01-01T00:00:00Z' }, held, now), refusedWith('expires_at'));
  });

  test('refuses malformed rules with 400', () => {
    const invalid = (err: unknown) => err instanceof ApiError && err.status === 400;
    assert.throws(() => rulesWithin({ name: 'n', scopes: ['read'], allowed_ips: ['not-a-network'] }, held, now), invalid);
    assert.throws(() => rulesWithin({ name: 'n', scopes: ['read'], allowed_models: ['no-such-model'] }, NO_RULES, now), invalid);
    assert.throws(() => rulesWithin({ name: 'n', scopes: ['read'], expires_at: '2025-01-01T00:00:00Z' }, NO_RULES, now), invalid);
  });
});
