// API keys look like mg_live_<keyid>_<secret>. Only a SHA-256 of the (high-entropy) secret is
// stored; lookups go by key id, and the hash is compared in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import { randomToken } from '../shared/ids.js';

const KEY_RE = /^mg_live_([0-9a-hjkmnp-tv-z]{16})_([0-9a-hjkmnp-tv-z]{32})$/;

interface GeneratedKey {
  id: string;
  secret: string;
  /** The full key, shown once. */
  key: string;
  secretHash: string;
}

function hashSecret(secret: string): string {
  return `sha256:${createHash('sha256').update(secret, 'utf8').digest('hex')}`;
}

export function generateApiKey(): GeneratedKey {
  const id = randomToken(16);
  const secret = randomToken(32);
  return { id, secret, key: `mg_live_${id}_${secret}`, secretHash: hashSecret(secret) };
}

/** Splits a presented key; null when it is not of our shape (never throws). */
export function parseApiKey(key: string): { id: string; secret: string } | null {
  const m = KEY_RE.exec(key);
  return m ? { id: m[1]!, secret: m[2]! } : null;
}

export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret));
  const b = Buffer.from(storedHash);
  return a.length === b.length && timingSafeEqual(a, b);
}
