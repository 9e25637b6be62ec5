// The `mediagen` CLI as a user runs it: a separate process against the real gateway and workers.
// Under a pseudo-terminal (util-linux `script`) --wait draws a progress bar that moves through the
// job's phases and --out saves a valid PNG; without a terminal the same command prints JSON lines.
// Errors exit with the documented codes and say what to do. A talking actor's background flags reach the job.
// `mediagen events` prints the workspace's event log and, with --follow, new events as they commit.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTenant, testConfig, type Tenant } from '../support/stack.js';
import { api, creditsOf, startGateway, startService, waitForJobStatus, type Service } from '../support/services.js';
import { makeSampleMedia } from '../support/https-server.js';
import { insertActor, insertVoice } from '../support/fixtures.js';

const cli = fileURLToPath(new URL('../../../client/bin/mediagen.js', import.meta.url));

let svc: Service;
let dir: string;

before(async () => {
  svc = await startService({
    LOCAL_RENDER_FAULTS: 'true',
    LOCAL_RENDER_LATENCY_MS: '4000',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
  });
  dir = await mkdtemp(join(tmpdir(), 'cli-test-'));
});

after(async () => {
  await svc?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
/** Runs the CLI with a terminal on stdin/stdout/stderr; the terminal's whole output comes back. */
const mediagenTty = (args: string[], env: Record<string, string>) =>
  run('script', ['-q', '-e', '-c', [process.execPath, cli, ...args].map(quote).join(' '), '/dev/null'], env);
const mediagen = (args: string[], env: Record<string, string>) => run(process.execPath, [cli, ...args], env);

const envFor = (t: Tenant) => ({ MEDIAGEN_API_KEY: t.apiKey, MEDIAGEN_BASE_URL: svc.gw.baseUrl });

function assertSquarePng(bytes: Buffer) {
  assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
  assert.equal(bytes.subarray(12, 16).toString('latin1'), 'IHDR');
  const [w, h] = [bytes.readUInt32BE(16), bytes.readUInt32BE(20)];
  assert.ok(w > 0 && w === h, `${w}x${h} is 1:1`);
}

describe('images generate --wait --out', () => {
  test('on a terminal: a progress bar moves through the phases to 100%, then the PNG is on disk', async () => {
    const t = await createTenant(svc.tdb.db);
    const out = join(dir, 'tty', 'fox.png');
    const r = await mediagenTty(
      ['images', 'generate', '--project', t.projectId, '--prompt', 'a red fox', '--aspect-ratio', '1:1', '--wait', '--out', out],
      envFor(t),
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);

    // Each redraw of the bar: "<id> <phase> |████░░| NN% · queue - · 1.2s"
    const frames = r.stdout
      .replace(/\x1b\[1G/g, '\n') // cli-progress redraws from column 1
      .replace(/\x1b(\[[0-9;?]*[A-Za-z]|[78])/g, '')
      .split(/[\r\n]+/)
      .map((l) => /^(img_\S+) (\S+)\s+\|.*\| (\d+)% · queue (\S+) · ([\d.]+)s/.exec(l.trim()))
      .filter((m): m is RegExpExecArray => m !== null);
    assert.ok(frames.length >= 3, `the bar was drawn several times:\n${r.stdout}`);
    const percents = frames.map((f) => Number(f[3]));
    assert.deepEqual(
      percents,
      [...percents].sort((a, b) => a - b),
      'the percent never goes back',
    );
    assert.equal(percents.at(-1), 100);
    assert.ok(new Set(percents).size >= 3, `the bar moved: ${[...new Set(percents)].join(', ')}`);
    const phases = [...new Set(frames.map((f) => f[2]!))];
    assert.ok(phases.includes('generating'), `phases shown: ${phases.join(' → ')}`);
    assert.ok(phases.length >= 2, `the bar went through phases: ${phases.join(' → ')}`);
    const elapsed = frames.map((f) => Number(f[5]));
    assert.ok(elapsed.at(-1)! > elapsed[0]!, 'elapsed time moves');
    assert.match(r.stdout, /completed in [\d.]+s/);
    assert.match(r.stdout, new RegExp(`saved ${out.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    assertSquarePng(await readFile(out));
  });

  test('without a terminal: JSON lines (created, progress…, completed with the saved files), then the PNG', async () => {
    const t = await createTenant(svc.tdb.db);
    const out = join(dir, 'pipe');
    const r = await mediagen(
      ['images', 'generate', '--project', t.projectId, '--prompt', 'a blue fox', '--count', '2', '--wait', '--out', `${out}/`],
      envFor(t),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '', 'no progress bar without a terminal');
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, any>);
    assert.equal(lines[0]!.event, 'created');
    assert.equal(lines.at(-1)!.event, 'completed');
    const progress = lines.slice(1, -1);
    assert.ok(progress.length >= 2 && progress.every((l) => l.event === 'progress' && l.id === lines[0]!.id));
    assert.ok(progress.some((l) => l.phase === 'generating'));
    const done = lines.at(-1)!;
    assert.equal(done.job.status, 'completed');
    assert.equal(done.files.length, 2);
    for (const f of done.files as string[]) assertSquarePng(await readFile(f));
  });
});

describe('errors and exit codes', () => {
  test('401, 402, 404, usage and a failed job exit 4, 5, 3, 2 and 6 with messages saying what to do', async () => {
    const t = await createTenant(svc.tdb.db, 4);
    const env = envFor(t);

    const auth = await mediagen(['projects', '--api-key', 'mg_live_bad_bad'], env);
    assert.equal(auth.code, 4, auth.stderr);
    assert.match(auth.stderr, /API key was refused[\s\S]*MEDIAGEN_API_KEY/);

    const missing = await mediagen(['jobs', 'get', 'img_missing'], env);
    assert.equal(missing.code, 3, missing.stderr);

    const usage = await mediagen(['images', 'generate', '--prompt', 'x'], env);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--project/);
    const noKey = await mediagen(['projects'], { MEDIAGEN_API_KEY: '', MEDIAGEN_BASE_URL: svc.gw.baseUrl });
    assert.equal(noKey.code, 2);
    assert.match(noKey.stderr, /MEDIAGEN_API_KEY/);

    const failed = await mediagen(['images', 'generate', '--project', t.projectId, '--prompt', 'doomed [fail:terminal]', '--wait'], env);
    assert.equal(failed.code, 6, failed.stdout + failed.stderr);
    assert.match(failed.stderr, /failed/);
    assert.equal(await creditsOf(svc.tdb.db, t), 4, 'the failed job was refunded');

    await mediagen(['images', 'generate', '--project', t.projectId, '--prompt', 'one', '--json'], env); // spends the 4 credits
    const broke = await mediagen(['images', 'generate', '--project', t.projectId, '--prompt', 'two'], env);
    assert.equal(broke.code, 5, broke.stderr);
    assert.match(broke.stderr, /not enough credits[\s\S]*credits grant/);
    assert.equal(await creditsOf(svc.tdb.db, t), 0);

    const json = await mediagen(['projects', '--json'], env);
    assert.equal(json.code, 0);
    assert.deepEqual(
      JSON.parse(json.stdout).data.map((p: { id: string }) => p.id),
      [t.projectId],
    );
  });
});

describe('other commands', () => {
  test('upload (through the gateway and --direct), jobs wait/get by id, models, and jobs list say what they did or why not', async () => {
    const t = await createTenant(svc.tdb.db);
    const env = envFor(t);
    const png = join(dir, 'in.png');
    await writeFile(png, (await makeSampleMedia())['image/png']);

    for (const extra of [[], ['--direct']]) {
      const up = await mediagen(['upload', png, '--project', t.projectId, '--json', ...extra], env);
      assert.equal(up.code, 0, up.stderr);
      const rec = JSON.parse(up.stdout) as { id: string; name: string; mime_type: string };
      assert.deepEqual([rec.name, rec.mime_type], ['in.png', 'image/png'], `upload ${extra.join(' ')}`);
    }
    const gone = await mediagen(['upload', join(dir, 'nope.png'), '--project', t.projectId], env);
    assert.equal(gone.code, 3);
    assert.match(gone.stderr, /cannot read/);

    // A job created without --wait (with a deadline), then followed and fetched by id.
    const made = await mediagen(['images', 'generate', '--project', t.projectId, '--prompt', 'later', '--deadline-seconds', '600', '--json'], env);
    assert.equal(made.code, 0, made.stderr);
    const id = (JSON.parse(made.stdout) as { id: string }).id;
    const waited = await mediagen(['jobs', 'wait', id, '--out', join(dir, 'waited') + '/'], env);
    assert.equal(waited.code, 0, waited.stderr);
    const last = JSON.parse(waited.stdout.trim().split('\n').at(-1)!) as { event: string; id: string; files: string[] };
    assert.deepEqual([last.event, last.id, last.files.length], ['completed', id, 1]);
    assertSquarePng(await readFile(last.files[0]!));
    const got = await mediagen(['jobs', 'get', id, '--json'], env);
    const record = JSON.parse(got.stdout) as { status: string; created_at: number; deadline_at: number };
    assert.equal(record.status, 'completed');
    assert.equal(record.deadline_at - record.created_at, 600_000, '--deadline-seconds sets the deadline');
    assert.equal((await mediagen(['jobs', 'get', 'file_123'], env)).code, 2, 'not a job id: usage');

    const models = await mediagen(['models', '--json'], env);
    assert.equal(models.code, 0, models.stderr);
    assert.ok((JSON.parse(models.stdout).data as { name: string }[]).some((m) => m.name === 'nano-banana-2'));

    const table = await mediagen(['models'], env);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /nano-banana-2\s+image\s+local\s+4\/image/);

    const list = await mediagen(['jobs', 'list', '--json'], env);
    assert.equal(list.code, 0, list.stderr);
    assert.equal((JSON.parse(list.stdout) as { data: { id: string }[] }).data[0]?.id, id, 'newest first');
    const none = await mediagen(['jobs', 'list', '--status', 'failed', '--json'], env);
    assert.deepEqual(JSON.parse(none.stdout), { data: [], next_cursor: null });

    // --priority on a create and on the list; high needs the workspace setting (exit 4, with what to do).
    const low = await mediagen(['images', 'generate', '--project', t.projectId, '--prompt', 'whenever', '--priority', 'low', '--json'], env);
    assert.equal(low.code, 0, low.stderr);
    const lowJob = JSON.parse(low.stdout) as { id: string; priority: string };
    assert.equal(lowJob.priority, 'low');
    const lows = await mediagen(['jobs', 'list', '--priority', 'low', '--json'], env);
    assert.deepEqual(
      (JSON.parse(lows.stdout) as { data: { id: string }[] }).data.map((j) => j.id),
      [lowJob.id],
    );
    const high = await mediagen(['images', 'generate', '--project', t.projectId, '--prompt', 'now', '--priority', 'high'], env);
    assert.equal(high.code, 4, high.stderr);
    assert.match(high.stderr, /priority: high is not enabled[\s\S]*--priority normal/);
    assert.equal((await mediagen(['images', 'generate', '--project', t.projectId, '--prompt', 'x', '--priority', 'urgent'], env)).code, 2);
  });

  test('talking-actors generate --background-file-id sends the background; with --background-url as well it is refused (exit 2)', async () => {
    const t = await createTenant(svc.tdb.db);
    const env = envFor(t);
    const mp4 = join(dir, 'background.mp4');
    await writeFile(mp4, (await makeSampleMedia())['video/mp4']);
    const up = await mediagen(['upload', mp4, '--project', t.projectId, '--json'], env);
    assert.equal(up.code, 0, up.stderr);
    const background = (JSON.parse(up.stdout) as { id: string }).id;
    const actor = await insertActor(svc.tdb.db, svc.gw.storage, { defaultVoiceId: await insertVoice(svc.tdb.db) });
    const talk = ['talking-actors', 'generate', '--project', t.projectId, '--actor', actor, '--script', 'Hello.', '--json'];

    const made = await mediagen([...talk, '--background-file-id', background], env);
    assert.equal(made.code, 0, made.stderr);
    const id = (JSON.parse(made.stdout) as { id: string }).id;
    const row = await svc.tdb.db.selectFrom('jobs').select('params').where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal((row.params as { background_video_file_id?: string }).background_video_file_id, background);
    const both = await mediagen([...talk, '--background-file-id', background, '--background-url', 'https://example.com/background.mp4'], env);
    assert.equal(both.code, 2, both.stderr);
    assert.match(both.stderr, /background_video_file_id or background_video_url, not both/);
  });

  test('a 429 past --max-retries exits 1 and says how long to wait', async () => {
    const small = await startGateway(testConfig(svc.tdb.url, { RATE_LIMIT_POLL_PER_MIN: '1' }), svc.tdb.db);
    try {
      const t = await createTenant(svc.tdb.db);
      const env = { MEDIAGEN_API_KEY: t.apiKey, MEDIAGEN_BASE_URL: small.baseUrl };
      assert.equal((await mediagen(['voices'], env)).code, 0);
      const limited = await mediagen(['voices', '--max-retries', '0'], env);
      assert.equal(limited.code, 1, limited.stderr);
      assert.match(limited.stderr, /rate limited[\s\S]*wait \d+ s/);
    } finally {
      await small.close();
    }
  });
});

describe('mediagen events', () => {
  test('prints the log after --after (JSON lines with --json, --types filters), and --follow prints new events as they commit', async () => {
    const t = await createTenant(svc.tdb.db);
    const env = envFor(t);
    const client = api(svc.gw.baseUrl, t.apiKey);
    const create = async (prompt: string) => {
      const r = await client.post('/v1/images/generate', { project_id: t.projectId, prompt, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
      assert.equal(r.status, 200, r.text);
      return r.body.data.id as string;
    };
    const first = await create('events one');
    await waitForJobStatus(client, `/v1/images/${first}`, ['completed']);

    const all = await mediagen(['events', '--json'], env);
    assert.equal(all.code, 0, all.stderr);
    const events = all.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { seq: number; type: string; subject_id: string });
    assert.deepEqual(
      events.map((e) => [e.seq, e.type, e.subject_id]),
      [
        [1, 'job.pending', first],
        [2, 'job.generating', first],
        [3, 'job.completed', first],
      ],
    );
    const done = await mediagen(['events', '--after', '1', '--types', 'job.completed'], env);
    assert.equal(done.code, 0, done.stderr);
    assert.deepEqual(
      done.stdout
        .trim()
        .split('\n')
        .map((l) => l.split('\t').slice(0, 1).concat(l.split('\t').slice(2, 4))),
      [['3', 'job.completed', first]],
    );
    assert.equal((await mediagen(['events', '--after', 'two'], env)).code, 2, 'not a seq: usage');

    // --follow: the three, then the next job's events as they happen, until interrupted.
    const child = spawn(process.execPath, [cli, 'events', '--follow', '--json', '--after', '3'], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let changed: () => void = () => undefined;
    child.stdout.on('data', (d) => {
      out += d;
      changed();
    });
    try {
      const second = await create('events two');
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`--follow printed ${JSON.stringify(out)} within 60 s`)), 60_000);
        changed = () => {
          if (out.includes('"job.completed"')) {
            clearTimeout(timer);
            resolve();
          }
        };
        changed();
      });
      const followed = out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { seq: number; type: string; subject_id: string });
      assert.deepEqual(
        followed.map((e) => [e.seq, e.type, e.subject_id]),
        [
          [4, 'job.pending', second],
          [5, 'job.generating', second],
          [6, 'job.completed', second],
        ],
      );
    } finally {
      child.kill('SIGTERM');
    }
  });
});
