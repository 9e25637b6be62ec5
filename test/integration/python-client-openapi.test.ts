// The Python client's generated models (python/src/mediagen/models.py) match the document the
// gateway serves: a gateway change that alters the contract fails here until the models are
// regenerated (python/scripts/generate_models.py, with the pinned datamodel-code-generator).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/stack.js';
import { startGateway, type InProcessGateway as Gateway } from '../support/services.js';

const pythonDir = fileURLToPath(new URL('../../../python/', import.meta.url));

let tdb: TestDatabase;
let gw: Gateway;
let dir: string;

before(async () => {
  tdb = await createTestDatabase();
  gw = await startGateway(testConfig(tdb.url), tdb.db);
  dir = await mkdtemp(join(tmpdir(), 'python-models-'));
});

after(async () => {
  await gw?.close();
  await tdb?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('python/src/mediagen/models.py is what the generator makes of GET /v1/openapi.json', { timeout: 120_000 }, async () => {
  const home = process.env.PYTHON_CLIENT_HOME;
  assert.ok(home && existsSync(join(home, '.installed')), 'PYTHON_CLIENT_HOME is not set or not installed: run the tests with `npm test`');
  const res = await fetch(`${gw.baseUrl}/v1/openapi.json`);
  assert.equal(res.status, 200);
  const docPath = join(dir, 'openapi.json');
  await writeFile(docPath, await res.text());
  const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = spawn(join(home, 'venv', 'bin', 'python'), ['scripts/generate_models.py', '--check', docPath], {
      cwd: pythonDir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    child.on('error', reject);
    child.on('close', (c) => resolve({ code: c, output: out }));
  });
  assert.equal(
    code,
    0,
    `python/src/mediagen/models.py is stale: run \`python/scripts/generate_models.py\` on the served document and commit the result\n${output}`,
  );
});
