// Ids are prefixed (readable in logs and the Temporal UI) and carry 120 random bits.
import { randomBytes } from 'node:crypto';

const alphabet = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lowercase

export function randomToken(chars = 24): string {
  const bytes = randomBytes(chars);
  let out = '';
  for (let i = 0; i < chars; i++) out += alphabet[bytes[i]! & 31];
  return out;
}

export function newId(prefix: string): string {
  return `${prefix}_${randomToken(24)}`;
}
