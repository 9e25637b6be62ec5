// How every process reaches Temporal securely: TLS (server CA, mTLS client pair, server
// name) and API key. The files are checked at start-up, each refusal one line naming the variable
// and the file, never a byte of key material.
import { readFileSync } from 'node:fs';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { z } from 'zod';
import { optionalString } from './env-types.js';
import { coreEnv } from './core.js';

/** Unset means "decide from the other variables": TLS when any file or an API key is set. */
const optionalBool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v === 'true' || v === '1' || v === 'yes'))
  .meta({ valueType: 'boolean (`true`/`1`/`yes`, `false`/`0`/`no`); unset: automatic' });

const file = (what: string) => optionalString.meta({ valueType: 'file path' }).describe(what);

export const temporalEnv = {
  TEMPORAL_TLS: optionalBool.describe(
    'Connect to Temporal over TLS. Unset: TLS when any TEMPORAL_TLS_* file or an API key is set, plain otherwise. `true` alone verifies the server against the system roots (Temporal Cloud). `false` with a TLS file set is refused; `false` with an API key sends the key in clear text (only for a loopback sidecar).',
  ),
  TEMPORAL_TLS_CA_FILE: file(
    "PEM file of the CA that signed the Temporal frontend's certificate (a self-hosted cluster). Unset: the system roots. Read once at start: a new CA needs a restart.",
  ),
  TEMPORAL_TLS_CERT_FILE: file(
    "PEM client certificate for mutual TLS (needs TEMPORAL_TLS_KEY_FILE, and must match it). Read once at start: a renewed certificate needs a restart (the SDK's connection options take the pair's bytes, not the files).",
  ),
  TEMPORAL_TLS_KEY_FILE: file('PEM private key of TEMPORAL_TLS_CERT_FILE (needs it). Read once at start.'),
  TEMPORAL_TLS_SERVER_NAME: optionalString.describe(
    "Name the frontend's certificate is checked against (and sent as SNI) instead of TEMPORAL_ADDRESS's host, e.g. when connecting through an address the certificate does not carry.",
  ),
  TEMPORAL_API_KEY: optionalString.describe(
    'API key sent as `Authorization: Bearer <key>` on every Temporal call (Temporal Cloud API-key auth). Implies TLS unless TEMPORAL_TLS=false. Not with TEMPORAL_API_KEY_FILE.',
  ),
  TEMPORAL_API_KEY_FILE: file(
    'File holding the API key (surrounding whitespace ignored). Re-read when it changes (polled every second), and the new key is used from the next call on, without a restart. Not with TEMPORAL_API_KEY.',
  ),
};

const settingsSchema = z.object({ TEMPORAL_ADDRESS: coreEnv.TEMPORAL_ADDRESS, ...temporalEnv });
export type TemporalSettings = z.infer<typeof settingsSchema>;

/** The TLS material and API key the SDK's connection options take, read and checked. */
export interface TemporalSecurity {
  tls: false | { serverRootCACertificate?: Buffer; clientCertPair?: { crt: Buffer; key: Buffer }; serverNameOverride?: string };
  apiKey?: { value: string; file?: string };
}

export class TemporalConfigError extends Error {
  override name = 'TemporalConfigError';
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  }
}

/** Read a file named by a variable; the error names both, and the system's reason (never the contents). */
function readNamed(variable: string, path: string, problems: string[]): Buffer | null {
  try {
    return readFileSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'does not exist' : code === 'EACCES' ? 'is not readable (permission denied)' : `cannot be read (${code ?? 'error'})`;
    problems.push(`${variable}: the file ${path} ${why}`);
    return null;
  }
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function certificates(bytes: Buffer): X509Certificate[] | null {
  const blocks = bytes.toString('latin1').match(PEM_CERT);
  if (!blocks) return null;
  try {
    return blocks.map((b) => new X509Certificate(b));
  } catch {
    return null;
  }
}

/** The API key in a file, trimmed; empty is a problem. */
function readApiKeyFile(path: string, problems: string[]): string | null {
  const bytes = readNamed('TEMPORAL_API_KEY_FILE', path, problems);
  if (!bytes) return null;
  const key = bytes.toString('utf8').trim();
  if (key === '') problems.push(`TEMPORAL_API_KEY_FILE: the file ${path} is empty`);
  return key === '' ? null : key;
}

/**
 * The settings turned into TLS material and an API key, or every refused combination, one line
 * each. Runs at start-up (loadConfig) and again where a connection is made.
 */
export function temporalSecurity(s: TemporalSettings): TemporalSecurity {
  const problems: string[] = [];
  const cert = s.TEMPORAL_TLS_CERT_FILE;
  const key = s.TEMPORAL_TLS_KEY_FILE;
  const ca = s.TEMPORAL_TLS_CA_FILE;
  if (cert && !key) problems.push('TEMPORAL_TLS_CERT_FILE: set without TEMPORAL_TLS_KEY_FILE (a client certificate needs its private key)');
  if (key && !cert) problems.push('TEMPORAL_TLS_KEY_FILE: set without TEMPORAL_TLS_CERT_FILE (a private key needs its client certificate)');
  if (s.TEMPORAL_API_KEY && s.TEMPORAL_API_KEY_FILE) problems.push('TEMPORAL_API_KEY: set together with TEMPORAL_API_KEY_FILE; use one of them');
  const files = (['TEMPORAL_TLS_CA_FILE', 'TEMPORAL_TLS_CERT_FILE', 'TEMPORAL_TLS_KEY_FILE'] as const).filter((v) => s[v]);
  if (s.TEMPORAL_TLS === false && files.length > 0) problems.push(`TEMPORAL_TLS: false, yet ${files.join(', ')} set (TLS files need TLS)`);
  if (s.TEMPORAL_TLS === false && s.TEMPORAL_TLS_SERVER_NAME)
    problems.push('TEMPORAL_TLS: false, yet TEMPORAL_TLS_SERVER_NAME set (a server name is a TLS setting)');

  let caBytes: Buffer | null = null;
  if (ca) {
    caBytes = readNamed('TEMPORAL_TLS_CA_FILE', ca, problems);
    if (caBytes && !certificates(caBytes)) problems.push(`TEMPORAL_TLS_CA_FILE: the file ${ca} holds no PEM certificate`);
  }
  let pair: { crt: Buffer; key: Buffer } | undefined;
  if (cert && key) {
    const crt = readNamed('TEMPORAL_TLS_CERT_FILE', cert, problems);
    const pk = readNamed('TEMPORAL_TLS_KEY_FILE', key, problems);
    const leaf = crt ? certificates(crt)?.[0] : undefined;
    if (crt && !leaf) problems.push(`TEMPORAL_TLS_CERT_FILE: the file ${cert} holds no PEM certificate`);
    let privateKey: ReturnType<typeof createPrivateKey> | null = null;
    if (pk) {
      try {
        privateKey = createPrivateKey(pk);
      } catch {
        problems.push(`TEMPORAL_TLS_KEY_FILE: the file ${key} holds no readable PEM private key (an encrypted key is not supported)`);
      }
    }
    if (leaf && privateKey && !leaf.checkPrivateKey(privateKey))
      problems.push(`TEMPORAL_TLS_CERT_FILE, TEMPORAL_TLS_KEY_FILE: the certificate ${cert} and the key ${key} do not belong together`);
    if (crt && pk) pair = { crt, key: pk };
  }
  let apiKey: TemporalSecurity['apiKey'];
  if (s.TEMPORAL_API_KEY_FILE) {
    const value = readApiKeyFile(s.TEMPORAL_API_KEY_FILE, problems);
    if (value) apiKey = { value, file: s.TEMPORAL_API_KEY_FILE };
  } else if (s.TEMPORAL_API_KEY) apiKey = { value: s.TEMPORAL_API_KEY };
  if (problems.length > 0) throw new TemporalConfigError(problems);

  const useTls = s.TEMPORAL_TLS ?? (files.length > 0 || s.TEMPORAL_TLS_SERVER_NAME !== undefined || apiKey !== undefined);
  const tls: TemporalSecurity['tls'] = useTls
    ? {
        ...(caBytes ? { serverRootCACertificate: caBytes } : {}),
        ...(pair ? { clientCertPair: pair } : {}),
        ...(s.TEMPORAL_TLS_SERVER_NAME ? { serverNameOverride: s.TEMPORAL_TLS_SERVER_NAME } : {}),
      }
    : false;
  return { tls, ...(apiKey ? { apiKey } : {}) };
}

/** Just the Temporal variables of an environment (for the scripts that read no other configuration). */
export function temporalSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): TemporalSettings {
  const parsed = settingsSchema.safeParse(env);
  if (!parsed.success) throw new TemporalConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  return parsed.data;
}
