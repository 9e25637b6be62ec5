// The Python client (python/, package `mediagen`) against the real gateway, workers, Postgres,
// Temporal and MinIO: its pytest suite runs over loopback with the pinned virtualenv that
// scripts/stack.sh installs (PYTHON_CLIENT_HOME), each pytest case reported here as a subtest;
// `mypy --strict` checks the package and the README example; and `pip install ./python` into a fresh
// virtualenv (offline, from the same pinned wheels) runs the README example against the gateway.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTenant, testConfig, type Tenant } from '../support/stack.js';
import { startGateway, startService, type InProcessGateway, type Service } from '../support/services.js';
import { insertActor, insertVoice } from '../support/fixtures.js';
import { makeSampleMedia, startHttpsTestServer, type HttpsTestServer } from '../support/https-server.js';
import { runAdmin } from '../../admin/main.js';

const pythonDir = fileURLToPath(new URL('../../../python/', import.meta.url));

let svc: Service;
let remote: HttpsTestServer;
let limited: InProcessGateway;
let strict: InProcessGateway;
let storageless: InProcessGateway;
let dir: string;
let fixturesPath: string;
let main: Tenant;

function venvPython(): string {
  const home = process.env.PYTHON_CLIENT_HOME;
  assert.ok(
    home && existsSync(join(home, '.installed')),
    "PYTHON_CLIENT_HOME is not set or not installed: run the tests with `npm test` (scripts/stack.sh installs the Python client's tools)",
  );
  return join(home, 'venv', 'bin', 'python');
}

/**
 * Runs a command to its end, or kills it after `timeoutMs` (a hung process must not outlive the
 * suite): exit code and interleaved output. Python gets no variable of the stack.
 */
function run(
  cmd: string,
  args: string[],
  opts: { cwd: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? dir,
      PYTHONDONTWRITEBYTECODE: '1',
      PIP_DISABLE_PIP_VERSION_CHECK: '1',
      ...opts.env,
    };
    const child = spawn(cmd, args, { cwd: opts.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const limit = opts.timeoutMs ?? 240_000;
    const timer = setTimeout(() => {
      output += `\n[killed after ${limit / 1000} s]`;
      child.kill('SIGKILL');
    }, limit);
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const tenantJson = (t: Tenant) => ({ api_key: t.apiKey, project_id: t.projectId, workspace_id: t.workspaceId });

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'python-client-'));
  const media = await makeSampleMedia();
  remote = await startHttpsTestServer();
  remote.file('/fox.png', media['image/png'], 'image/png');
  svc = await startService({
    LOCAL_RENDER_FAULTS: 'true',
    LOCAL_RENDER_LATENCY_MS: '1000',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
    FETCH_ALLOW_LOOPBACK_ORIGIN: remote.origin,
    FETCH_EXTRA_CA_FILE: remote.caFile,
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    WEBHOOK_RETRY_INITIAL_MS: '100',
    WEBHOOK_RETRY_MAX_INTERVAL_MS: '300',
  });
  // Gateways of their own with tiny limits (the limiter's state is in the suite's database), on the
  // suite's task queues so the workers above run what they start: two requests per class per 3 s,
  // and two per minute (refused however slow the machine is).
  const queues = { TASK_QUEUE_PREFIX: svc.config.TASK_QUEUE_PREFIX };
  limited = await startGateway(
    testConfig(svc.tdb.url, { ...queues, RATE_LIMIT_POLL_PER_MIN: '2', RATE_LIMIT_GENERATE_PER_MIN: '2', RATE_LIMIT_WINDOW_MS: '3000' }),
    svc.tdb.db,
  );
  strict = await startGateway(testConfig(svc.tdb.url, { ...queues, RATE_LIMIT_POLL_PER_MIN: '2' }), svc.tdb.db);
  // A gateway whose bucket does not exist: storage answers, but not for it (5xx answers).
  storageless = await startGateway(testConfig(svc.tdb.url, { ...queues, S3_BUCKET: `missing-${Date.now()}` }), svc.tdb.db);

  main = await createTenant(svc.tdb.db, 1_000_000);
  const voiceId = await insertVoice(svc.tdb.db);
  const actorId = await insertActor(svc.tdb.db, svc.gw.storage, { defaultVoiceId: voiceId });
  const rotated = await runAdmin(['webhook', 'secret', 'rotate', '--workspace', main.workspaceId, '--as', main.ownerEmail, '--json'], {
    ...process.env,
    DATABASE_URL: svc.tdb.url,
  });
  assert.equal(rotated.code, 0, rotated.stderr);
  const webhookSecret = (JSON.parse(rotated.stdout) as { secret: string }).secret;

  const files: Record<string, string> = {};
  for (const [name, type] of [
    ['fox.png', 'image/png'],
    ['clip.mp4', 'video/mp4'],
    ['fox.jpg', 'image/jpeg'],
  ] as const) {
    files[name] = join(dir, name);
    await writeFile(files[name], media[type]);
  }
  fixturesPath = join(dir, 'fixtures.json');
  await writeFile(
    fixturesPath,
    JSON.stringify({
      base_url: svc.gw.baseUrl,
      tenants: {
        main: tenantJson(main),
        poor: tenantJson(await createTenant(svc.tdb.db, 3)),
        other: tenantJson(await createTenant(svc.tdb.db)),
        idempotency: tenantJson(await createTenant(svc.tdb.db, 1000)),
      },
      actor_id: actorId,
      voice_id: voiceId,
      webhook_secret: webhookSecret,
      remote_image_url: `${remote.origin}/fox.png`,
      files,
      storageless: { base_url: storageless.baseUrl, ...tenantJson(await createTenant(svc.tdb.db)) },
      limited: { base_url: limited.baseUrl, ...tenantJson(await createTenant(svc.tdb.db)) },
      strict: [
        { base_url: strict.baseUrl, ...tenantJson(await createTenant(svc.tdb.db)) },
        { base_url: strict.baseUrl, ...tenantJson(await createTenant(svc.tdb.db)) },
      ],
    }),
  );
});

after(async () => {
  // Webhook deliveries still retrying end with the suite.
  const rows = await svc?.tdb.db.selectFrom('webhook_deliveries').select('id').where('delivered_at', 'is', null).execute();
  for (const r of rows ?? [])
    await svc.gw.client.workflow
      .getHandle(r.id)
      .terminate('test over')
      .catch(() => undefined);
  await limited?.close();
  await strict?.close();
  await storageless?.close();
  await svc?.close();
  await remote?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface PytestCase {
  name: string;
  failure: string | null;
  skipped: string | null;
}

function unescapeXml(s: string): string {
  return s.replace(/&(lt|gt|quot|apos|amp|#(\d+)|#x([0-9a-f]+));/gi, (_, name: string, dec?: string, hex?: string) => {
    if (dec) return String.fromCodePoint(Number(dec));
    if (hex) return String.fromCodePoint(parseInt(hex, 16));
    return { lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' }[name.toLowerCase()] ?? '';
  });
}

/** The cases of pytest's JUnit XML report, with the failure (or error) text of each. */
function junitCases(xml: string): PytestCase[] {
  const cases: PytestCase[] = [];
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const attrs = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((a) => [a[1]!, unescapeXml(a[2]!)]));
    const inner = m[2] ?? '';
    const failed = /<(failure|error)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/.exec(inner);
    const skipped = /<skipped\b[^>]*?message="([^"]*)"/.exec(inner);
    cases.push({
      name: `${attrs.classname ?? ''}::${attrs.name ?? ''}`,
      failure: failed ? unescapeXml(`${/message="([^"]*)"/.exec(failed[2] ?? '')?.[1] ?? failed[1]}\n${failed[3] ?? ''}`) : null,
      skipped: skipped ? unescapeXml(skipped[1]!) : null,
    });
  }
  return cases;
}

test('pytest: the Python client against the live gateway (every operation, waits, retries, uploads, webhooks, errors)', { timeout: 900_000 }, async (t) => {
  const python = venvPython();
  const report = join(dir, 'pytest.xml');
  const { code, output } = await run(python, ['-m', 'pytest', '-p', 'no:cacheprovider', '-q', '-rfE', `--junitxml=${report}`, 'tests'], {
    cwd: pythonDir,
    env: { MEDIAGEN_TEST_FIXTURES: fixturesPath },
    timeoutMs: 720_000,
  });
  const xml = existsSync(report) ? await readFile(report, 'utf8') : '';
  const cases = junitCases(xml);
  for (const c of cases) {
    await t.test(c.name, { skip: c.skipped ?? false }, () => {
      if (c.failure) assert.fail(`${c.name} failed in pytest:\n${c.failure}`);
    });
  }
  assert.ok(cases.length >= 20, `pytest reported ${cases.length} cases:\n${output}`);
  assert.equal(code, 0, `pytest exited ${code}:\n${output}`);
});

test('mypy --strict passes on the package, its tests and the README example', { timeout: 300_000 }, async () => {
  const python = venvPython();
  const readme = await readFile(join(pythonDir, 'README.md'), 'utf8');
  const example = /```python\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(example, 'python/README.md has a ```python example');
  const examplePath = join(dir, 'readme_example.py');
  await writeFile(examplePath, example);
  const { code, output } = await run(
    python,
    ['-m', 'mypy', '--strict', '--python-version', '3.10', '--cache-dir', join(dir, 'mypy-cache'), 'src/mediagen', 'tests', examplePath],
    {
      cwd: pythonDir,
      env: { MYPYPATH: `${join(pythonDir, 'src')}:${join(pythonDir, 'tests')}` },
    },
  );
  assert.equal(code, 0, `mypy --strict found errors:\n${output}`);
  assert.match(output, /Success: no issues found/);
});

test('pip install ./python into a fresh virtualenv, then the README example creates, waits for and downloads a fox', { timeout: 300_000 }, async () => {
  venvPython();
  const wheels = join(process.env.PYTHON_CLIENT_HOME!, 'wheels');
  const venv = join(dir, 'fresh-venv');
  const created = await run('python3', ['-m', 'venv', venv], { cwd: dir });
  assert.equal(created.code, 0, created.output);
  // Offline: the build backend and the dependencies come from the pinned wheels stack.sh keeps.
  const installed = await run(join(venv, 'bin', 'python'), ['-m', 'pip', 'install', '-q', '--no-index', '--find-links', wheels, pythonDir], { cwd: dir });
  assert.equal(installed.code, 0, `pip install ./python failed:\n${installed.output}`);

  const readme = await readFile(join(pythonDir, 'README.md'), 'utf8');
  const example = /```python\n([\s\S]*?)```/.exec(readme)![1]!;
  const work = join(dir, 'example');
  await mkdir(work);
  await writeFile(join(work, 'example.py'), example);
  // Run outside python/, so `mediagen` can only come from the installed package.
  const ran = await run(join(venv, 'bin', 'python'), ['example.py'], {
    cwd: work,
    env: { MEDIAGEN_API_KEY: main.apiKey, MEDIAGEN_BASE_URL: `${svc.gw.baseUrl}/v1` },
  });
  assert.equal(ran.code, 0, `the README example failed:\n${ran.output}`);
  assert.match(ran.output, /^completed /m, `progress was printed:\n${ran.output}`);
  const out = await readdir(join(work, 'out'));
  assert.equal(out.length, 1, `one fox downloaded: ${out.join(', ')}`);
  const png = await readFile(join(work, 'out', out[0]!));
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'the download is a PNG');
  const where = await run(join(venv, 'bin', 'python'), ['-c', 'import mediagen; print(mediagen.__file__)'], { cwd: work });
  assert.match(where.output, new RegExp(`^${venv.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/lib/`), 'imported from the fresh virtualenv');
});
