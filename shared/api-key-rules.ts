// What a scoped API key may do (docs/api/api-keys.md): its scopes, the models and job kinds its
// creates may use, the addresses it may be presented from, and when it expires. Pure functions: the
// gateway caches a key's rules with the key (api/auth.ts) and checks them in memory, so a rule costs
// no query on any path (the status poll's one statement included).
import { isIP } from 'node:net';

/** The scopes a key may hold; every endpoint declares the one it needs (api/operations.ts). */
export const apiKeyScopes = ['read', 'generate', 'uploads', 'admin'] as const;
export type ApiKeyScope = (typeof apiKeyScopes)[number];

/** A network as parsed from CIDR notation: the address family, the network bits and the prefix length. */
interface Cidr {
  family: 4 | 6;
  bits: bigint;
  prefix: number;
  /** Canonical text, host bits cleared (as Postgres' cidr prints it). */
  text: string;
}

/** A key's rules; null for "no such rule". */
export interface KeyRules {
  scopes: readonly ApiKeyScope[] | null;
  allowedModels: readonly string[] | null;
  allowedKinds: readonly string[] | null;
  allowedIps: readonly Cidr[] | null;
  /** ms since the epoch, or null. */
  expiresAt: number | null;
}

export const NO_RULES: KeyRules = { scopes: null, allowedModels: null, allowedKinds: null, allowedIps: null, expiresAt: null };

/** A key's refusal by one of its rules: `rule` names the scope or the rule (403 key_scope_denied). */
export interface RuleRefusal {
  rule: string;
  message: string;
}

const width = (family: 4 | 6) => (family === 4 ? 32 : 128);

const v4Bits = (address: string) => address.split('.').reduce((acc, o) => (acc << 8n) | BigInt(Number(o)), 0n);

/** An address's family and bits (isIP-valid input only); an IPv4-mapped IPv6 address is its IPv4 address. */
function addressBits(address: string): { family: 4 | 6; bits: bigint } | null {
  const family = isIP(address);
  if (family === 4) return { family, bits: v4Bits(address) };
  if (family !== 6) return null;
  // A dual-stack server reports an IPv4 client as ::ffff:a.b.c.d.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return { family: 4, bits: v4Bits(mapped[1]!) };
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  // A trailing dotted quad is two groups.
  const groups = (part: string | undefined): bigint[] =>
    part ? part.split(':').flatMap((g) => (g.includes('.') ? [v4Bits(g) >> 16n, v4Bits(g) & 0xffffn] : [BigInt(parseInt(g, 16))])) : [];
  const h = groups(head);
  const t = groups(tail);
  const all = tail === undefined ? h : [...h, ...Array<bigint>(8 - h.length - t.length).fill(0n), ...t];
  return { family: 6, bits: all.reduce((acc, g) => (acc << 16n) | g, 0n) };
}

function formatBits(family: 4 | 6, bits: bigint): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => String((bits >> s) & 0xffn)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => (bits >> BigInt(112 - 16 * i)) & 0xffffn);
  // The longest run of two or more zero groups becomes "::" (RFC 5952).
  let best = { at: -1, len: 1 };
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && groups[j] === 0n) j++;
    if (j - i > best.len) best = { at: i, len: j - i };
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.at < 0) return hex.join(':');
  return `${hex.slice(0, best.at).join(':')}::${hex.slice(best.at + best.len).join(':')}`;
}

/** Parses `a.b.c.d/n`, `x::y/n` or a bare address (a /32 or /128); host bits are cleared. Null when malformed. */
export function parseCidr(text: string): Cidr | null {
  const [address, prefixText, extra] = text.trim().split('/');
  if (extra !== undefined || !address) return null;
  const parsed = addressBits(address);
  if (!parsed) return null;
  const w = width(parsed.family);
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return null;
  const prefix = prefixText === undefined ? w : Number(prefixText);
  if (prefix > w) return null;
  const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(w - prefix);
  const bits = parsed.bits & mask;
  return { family: parsed.family, bits, prefix, text: `${formatBits(parsed.family, bits)}/${prefix}` };
}

/** Whether `inner` (a network or an address as a /32, /128) lies within `outer`. */
export function cidrContains(outer: Cidr, inner: Cidr): boolean {
  if (outer.family !== inner.family || inner.prefix < outer.prefix) return false;
  const w = width(outer.family);
  const shift = BigInt(w - outer.prefix);
  return outer.prefix === 0 || inner.bits >> shift === outer.bits >> shift;
}

/** The key's refusal of an endpoint needing `scope`, if any. */
export function scopeRefusal(rules: KeyRules, scope: ApiKeyScope): RuleRefusal | null {
  if (rules.scopes === null || rules.scopes.includes(scope)) return null;
  return { rule: scope, message: `this API key lacks the ${scope} scope (it has ${rules.scopes.join(', ')})` };
}

/** The key's refusal of a request from `address` (the client's IP as the gateway sees it), if any. */
export function addressRefusal(rules: KeyRules, address: string | undefined): RuleRefusal | null {
  if (rules.allowedIps === null) return null;
  const client = address ? parseCidr(address) : null;
  if (client && rules.allowedIps.some((net) => cidrContains(net, client))) return null;
  return {
    rule: 'allowed_ips',
    message: `this API key may not be used from ${address ?? 'an unknown address'}: its allowed_ips are ${rules.allowedIps.map((n) => n.text).join(', ')}`,
  };
}

/** The key's refusal of a create of `kind` with `model`, if any. */
export function createRefusalOf(rules: KeyRules, kind: string, model: string | undefined): RuleRefusal | null {
  if (rules.allowedKinds !== null && !rules.allowedKinds.includes(kind)) {
    return { rule: 'allowed_kinds', message: `this API key may not create ${kind} jobs: its allowed_kinds are ${rules.allowedKinds.join(', ')}` };
  }
  if (rules.allowedModels !== null && model !== undefined && !rules.allowedModels.includes(model)) {
    return { rule: 'allowed_models', message: `this API key may not use model ${model}: its allowed_models are ${rules.allowedModels.join(', ')}` };
  }
  return null;
}

/** A key's rules from its row's columns (allowed_ips as text; a malformed stored CIDR matches nothing). */
export function rulesOf(row: {
  scopes: readonly string[] | null;
  allowed_models: readonly string[] | null;
  allowed_kinds: readonly string[] | null;
  allowed_ips: readonly string[] | null;
  expires_at: Date | null;
}): KeyRules {
  if (row.scopes === null && row.allowed_models === null && row.allowed_kinds === null && row.allowed_ips === null && row.expires_at === null) return NO_RULES;
  return {
    scopes: row.scopes as ApiKeyScope[] | null,
    allowedModels: row.allowed_models,
    allowedKinds: row.allowed_kinds,
    allowedIps: row.allowed_ips === null ? null : row.allowed_ips.flatMap((t) => parseCidr(t) ?? []),
    expiresAt: row.expires_at === null ? null : row.expires_at.getTime(),
  };
}
