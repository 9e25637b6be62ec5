// The media sandbox (activities/providers/media-sandbox.ts) around the real ffmpeg, ffprobe and
// other binaries, run through the one runner every media tool goes through (runTool). Inside it a
// run sees only the minimal environment, cannot reach a loopback listener this test starts or the
// stack's Postgres port, and cannot read a key file the worker's user can; the same probes
// succeed with the sandbox off, so each check can fail. A normal render (inspect a PNG, encode an
// MP4 from it) still works inside it, and a run writing past the file-size cap fails. Where the
// isolation cannot be made (not root, no unshare/setpriv), `required` refuses and `auto` degrades
// to the minimal environment, which the test then checks alone.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configureMediaSandbox, mediaSandbox, mediaTempDir, SandboxUnavailableError } from '../../activities/providers/media-sandbox.js';
import { defaultMediaTools, inspectUntrusted, runFfmpegUntrusted, runTool, H264_MP4_ARGS, untrustedInputArgs } from '../../activities/providers/media-tools.js';
import { renderImagePng } from '../../activities/providers/local/png.js';
import { testConfig } from '../support/stack.js';

const CANARY = 'sandbox-canary-secret-value-4711';
const KEY_CONTENT = '-----BEGIN PRIVATE KEY----- sandbox test key';

describe('media sandbox', () => {
  let listener: net.Server;
  let port = 0;
  let accepted = 0;
  let secretsDir: string;
  let keyFile: string;
  let tmpRoot: string;
  const dbPort = Number(new URL(testConfig(process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/x').DATABASE_URL).port || 5432);
  const isRoot = process.getuid?.() === 0;

  before(async () => {
    process.env.SANDBOX_TEST_SECRET = CANARY;
    listener = net.createServer((s) => {
      accepted++;
      s.destroy();
    });
    listener.listen(0, '127.0.0.1');
    await once(listener, 'listening');
    port = (listener.address() as net.AddressInfo).port;
    // A key file as the worker's secrets are: readable by the worker's user only.
    secretsDir = await mkdtemp(join(tmpdir(), 'sandbox-secrets-'));
    keyFile = join(secretsDir, 'tls.key');
    await writeFile(keyFile, KEY_CONTENT, { mode: 0o600 });
    tmpRoot = await mkdtemp(join(tmpdir(), 'sandbox-root-'));
  });

  after(async () => {
    delete process.env.SANDBOX_TEST_SECRET;
    listener?.close();
    await configureMediaSandbox({ mode: 'off' });
    await rm(secretsDir, { recursive: true, force: true });
    await rm(tmpRoot, { recursive: true, force: true });
  });

  const probes = {
    environment: () => runTool('env', [], { stdout: true }).then((b) => b.toString('utf8')),
    /** ffmpeg opening a TCP input: connects, or fails. */
    connect: (to: number) =>
      runTool(
        'ffmpeg',
        ['-hide_banner', '-loglevel', 'error', '-rw_timeout', '3000000', '-f', 'data', '-i', `tcp://127.0.0.1:${to}?timeout=3000000`, '-f', 'null', '-'],
        {
          timeoutMs: 20_000,
        },
      ).then(
        () => 'connected',
        (err: Error) => err.message,
      ),
    readKey: () =>
      runTool('cat', [keyFile], { stdout: true }).then(
        (b) => b.toString('utf8'),
        (err: Error) => `refused: ${err.message}`,
      ),
  };

  test('with the sandbox off, the probes reach what they try (so the checks below can fail)', async () => {
    await configureMediaSandbox({ mode: 'off', tmpRoot });
    // The minimal environment applies even off: the canary never reaches a tool.
    assert.doesNotMatch(await probes.environment(), new RegExp(CANARY));
    assert.equal(await probes.readKey(), KEY_CONTENT, 'the worker user reads its key file');
    const before = accepted;
    await probes.connect(port);
    assert.ok(accepted > before, 'the loopback listener saw the connection');
  });

  test(
    'where the isolation cannot be made, required refuses and auto says why and keeps the minimal environment',
    { skip: isRoot && 'this machine can make the isolation' },
    async () => {
      await assert.rejects(configureMediaSandbox({ mode: 'required', tmpRoot }), SandboxUnavailableError);
      let why = '';
      await configureMediaSandbox({ mode: 'auto', tmpRoot }, (w) => (why = w));
      assert.match(why, /root|unshare|setpriv/);
      assert.equal(mediaSandbox().isolated, false);
    },
  );

  describe('inside the sandbox', { skip: !isRoot && 'the isolation needs root (see the degraded test)' }, () => {
    before(async () => {
      await configureMediaSandbox({ mode: 'required', tmpRoot, fileSizeBytes: 2 * 1024 * 1024 });
      assert.equal(mediaSandbox().isolated, true);
    });

    test("the environment holds PATH, LANG, TMPDIR and HOME only, none of the worker's", async () => {
      const env = await probes.environment();
      const names = env
        .trim()
        .split('\n')
        .map((l) => l.split('=')[0])
        .sort();
      assert.deepEqual(names, ['HOME', 'LANG', 'PATH', 'TMPDIR']);
      assert.doesNotMatch(env, new RegExp(CANARY));
      assert.doesNotMatch(env, /DATABASE_URL|S3_|KEY/);
    });

    test('no network: a loopback listener and the database port are unreachable', async () => {
      const before = accepted;
      const toListener = await probes.connect(port);
      assert.notEqual(toListener, 'connected');
      assert.equal(accepted, before, 'the loopback listener saw no connection');
      const toDatabase = await probes.connect(dbPort);
      assert.notEqual(toDatabase, 'connected', `the database port ${dbPort} is unreachable`);
      assert.match(`${toListener} ${toDatabase}`, /unreachable|refused|Network|Invalid argument|error/i);
    });

    test("the worker's key file is not readable", async () => {
      const got = await probes.readKey();
      assert.match(got, /^refused: .*Permission denied/);
      assert.doesNotMatch(got, /BEGIN PRIVATE KEY/);
    });

    test('a normal render still works: a PNG is inspected and encoded to MP4 in a run directory of the sandbox', async () => {
      const dir = await mediaTempDir('sandbox-render-');
      try {
        const input = join(dir, 'in.png');
        await writeFile(input, await renderImagePng('sandbox', 128, 128));
        const inspected = await inspectUntrusted(input, 'image', 'the test image', defaultMediaTools);
        assert.deepEqual([inspected.width, inspected.height], [128, 128]);
        const output = join(dir, 'out.mp4');
        await runFfmpegUntrusted(
          ['-y', ...untrustedInputArgs(inspected, defaultMediaTools), '-frames:v', '1', ...H264_MP4_ARGS, '-f', 'mp4', output],
          defaultMediaTools,
        );
        assert.ok((await stat(output)).size > 1000);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    test('a run writing past the file-size cap fails', async () => {
      const dir = await mediaTempDir('sandbox-fsize-');
      try {
        await assert.rejects(
          runFfmpegUntrusted(['-y', '-f', 'lavfi', '-i', 'anoisesrc=d=60:r=48000', '-c:a', 'pcm_s32le', '-f', 'wav', join(dir, 'big.wav')], defaultMediaTools),
        );
        assert.ok((await stat(join(dir, 'big.wav'))).size <= 2 * 1024 * 1024);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
});
