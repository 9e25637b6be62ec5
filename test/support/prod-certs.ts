// The prod profile's certificate set (scripts/prod/certs.sh: a private CA, the Temporal server's
// pair, the app's client pair, and a pair from a CA nobody trusts) made once into a temporary
// directory, for tests of the Temporal TLS settings that need no running profile.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

export interface CertSet {
  dir: string;
  file(name: string): string;
  remove(): Promise<void>;
}

const certsScript = fileURLToPath(new URL('../../../scripts/prod/certs.sh', import.meta.url));

export async function makeCerts(): Promise<CertSet> {
  const dir = await mkdtemp(join(tmpdir(), 'mg-certs-'));
  await promisify(execFile)('bash', [certsScript, dir], { timeout: 60_000 });
  return { dir, file: (name) => join(dir, name), remove: () => rm(dir, { recursive: true, force: true }) };
}
