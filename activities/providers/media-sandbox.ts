// The sandbox every ffmpeg, ffprobe and espeak-ng run lives in (docs/operations/media-sandbox.md).
// A parser bug in a tool reading a tenant's file must find nothing to steal and nowhere to send it:
//
// - Always: a minimal environment (PATH, LANG, TMPDIR and HOME pointing at the sandbox's own temp
//   directory), never the worker's (provider keys, database and S3 credentials, key file paths), and
//   a cap on the size of any file the tool writes (prlimit --fsize), on top of the run caps of
//   media-tools.ts.
// - Where it can be made (the worker runs as root, util-linux unshare and setpriv are present): a
//   network namespace of its own with no interface up (`unshare --net`: no loopback, no database, no
//   internet) and another, unprivileged user (`setpriv --reuid/--regid`, no supplementary groups,
//   every capability dropped, no_new_privs), so key files readable only by the worker's user are
//   not readable by the tool. The run's working directories are made that user's
//   (`mediaTempDir`); the worker, as root, still reads and removes them.
//
// MEDIA_SANDBOX says what happens where it cannot be made: `auto` runs with the minimal environment
// and the caps only and logs once that it did; `required` refuses the run (the worker fails its
// start-up check), for deployments that promise the boundary; `off` never tries (the minimal
// environment still applies).
import { spawnSync } from 'node:child_process';
import { chown, mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

type SandboxMode = 'auto' | 'required' | 'off';

interface SandboxSettings {
  mode: SandboxMode;
  uid: number;
  gid: number;
  /** Root of the sandbox's temp space (TMPDIR and HOME of every run, and the runs' working directories). */
  tmpRoot: string;
  /** Largest file a tool may write, in bytes (prlimit --fsize); 0 = uncapped. */
  fileSizeBytes: number;
  unsharePath: string;
  setprivPath: string;
}

/** What a run is started as. */
export interface SandboxLaunch {
  /** Prefix of the argument vector (the isolating commands), before prlimit/the tool. */
  prefix: string[];
  env: Record<string, string>;
  /** The whole isolation (network namespace and user) is in place. */
  isolated: boolean;
}

const defaults: SandboxSettings = {
  mode: 'off',
  uid: 65534,
  gid: 65534,
  tmpRoot: join(tmpdir(), 'mediagen-media'),
  fileSizeBytes: 0,
  unsharePath: 'unshare',
  setprivPath: 'setpriv',
};

let settings: SandboxSettings = { ...defaults };
/** Whether isolation can be made here: decided once per settings. */
let available: boolean | undefined;
let warned = false;

export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError';
}

/**
 * Sets the process's sandbox (the worker service calls it at start with its configuration). Throws
 * when `required` and the isolation cannot be made here; `onDegraded` hears once why `auto` runs
 * without it.
 */
export async function configureMediaSandbox(next: Partial<SandboxSettings>, onDegraded?: (why: string) => void): Promise<void> {
  settings = { ...defaults, ...next };
  available = undefined;
  warned = false;
  await mkdir(settings.tmpRoot, { recursive: true, mode: 0o700 });
  if (settings.mode === 'off') return;
  const why = probeIsolation();
  if (why === null) {
    await chown(settings.tmpRoot, settings.uid, settings.gid);
    return;
  }
  if (settings.mode === 'required') throw new SandboxUnavailableError(`MEDIA_SANDBOX=required, but the media sandbox cannot be made here: ${why}`);
  warned = true;
  onDegraded?.(why);
}

/** null when `unshare --net` + `setpriv` to the sandbox user work here, else why not. */
function probeIsolation(): string | null {
  if (available !== undefined) return available ? null : 'isolation unavailable';
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    available = false;
    return `the worker does not run as root (uid ${process.getuid()}), so it can neither switch user nor make a network namespace`;
  }
  const probe = spawnSync(settings.unsharePath, ['--net', '--', settings.setprivPath, ...setprivArgs(), '--', 'true'], { stdio: 'pipe', timeout: 10_000 });
  available = probe.status === 0;
  if (available) return null;
  return `${settings.unsharePath} --net / ${settings.setprivPath} failed: ${probe.error?.message ?? probe.stderr?.toString('utf8').trim().slice(0, 300) ?? `exit ${probe.status}`}`;
}

function setprivArgs(): string[] {
  return [`--reuid=${settings.uid}`, `--regid=${settings.gid}`, '--clear-groups', '--no-new-privs', '--inh-caps=-all', '--bounding-set=-all'];
}

/** How the next run starts: isolated where it can be, always with the minimal environment. */
export function sandboxLaunch(): SandboxLaunch {
  const env: Record<string, string> = {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    LANG: 'C.UTF-8',
    TMPDIR: settings.tmpRoot,
    HOME: settings.tmpRoot,
  };
  if (settings.mode === 'off' || available !== true) {
    if (settings.mode === 'required') throw new SandboxUnavailableError('MEDIA_SANDBOX=required, but the media sandbox is not in place');
    return { prefix: [], env, isolated: false };
  }
  return { prefix: [settings.unsharePath, '--net', '--', settings.setprivPath, ...setprivArgs(), '--'], env, isolated: true };
}

/** The `prlimit --fsize` argument of a run, when file sizes are capped. */
export function fileSizeLimitArgs(): string[] {
  return settings.fileSizeBytes > 0 ? [`--fsize=${settings.fileSizeBytes}`] : [];
}

/**
 * A fresh working directory for a run on tenant media, under the sandbox's temp root and owned by
 * the sandbox user when the isolation is in place (the tool reads its inputs and writes its outputs
 * there; the worker, as root, reads and removes it).
 */
export async function mediaTempDir(prefix: string): Promise<string> {
  await mkdir(settings.tmpRoot, { recursive: true, mode: 0o700 });
  const dir = await mkdtemp(join(settings.tmpRoot, prefix));
  if (available === true && settings.mode !== 'off') await chown(dir, settings.uid, settings.gid);
  return dir;
}

/** The settings in force (for the start-up log line and tests). */
export function mediaSandbox(): Readonly<SandboxSettings> & { isolated: boolean; degraded: boolean } {
  return { ...settings, isolated: available === true && settings.mode !== 'off', degraded: warned };
}
