// The local renderer and the media tools (ffmpeg, ffprobe, espeak-ng) run on tenants' files.
import { z } from 'zod';
import { bool, int } from './env-types.js';

const path = (name: string) => z.string().default(name).meta({ valueType: 'command or path' });

export const localRenderEnv = {
  LOCAL_RENDER_LATENCY_MS: int(0, 0, 600_000).describe('Test-only: the local renderer waits this long per job. Refused above 0 when NODE_ENV=production.'),
  LOCAL_RENDER_FAULTS: bool(false).describe('Test-only fault injection: prompts/scripts containing the marker fail as said. Refused when NODE_ENV=production.'),
  FFMPEG_PATH: path('ffmpeg').describe('The ffmpeg binary.'),
  FFPROBE_PATH: path('ffprobe').describe('The ffprobe binary.'),
  // Caps of every ffmpeg/ffprobe run on a tenant's file (activities/providers/media-tools.ts).
  MEDIA_INPUT_MAX_VIDEO_PIXELS: int(4096 * 4096, 1).describe('Input videos with larger frames fail the job.'),
  MEDIA_INPUT_MAX_SECONDS: int(600, 1, 86_400).describe('Input videos longer than this fail the job.'),
  MEDIA_TOOL_THREADS: int(2, 1, 64).describe('Threads per ffmpeg/ffprobe run.'),
  MEDIA_TOOL_CONCURRENCY: int(0, 0, 1_000).describe(
    'Media tool runs (ffmpeg, ffprobe, espeak-ng) at once per worker process; the others wait their turn. 0: no cap beyond the activity slots.',
  ),
  MEDIA_TOOL_MEMORY_MB: int(1536, 0, 1_048_576).describe('Address space of each tool process, through util-linux prlimit (0: uncapped).'),
  ESPEAK_PATH: path('espeak-ng').describe('The espeak-ng binary (speech of the local renderer).'),
  // The media sandbox (activities/providers/media-sandbox.ts, docs/operations/media-sandbox.md).
  MEDIA_SANDBOX: z
    .enum(['auto', 'required', 'off'])
    .default('auto')
    .describe(
      'Media tools run without network and as the nobody user (65534) where the worker can make that (root, util-linux unshare and setpriv from PATH). auto: else run with the minimal environment only and log it; required: else the worker refuses to start; off: never isolate (the minimal environment still applies).',
    ),
  MEDIA_TOOL_FILE_MB: int(4096, 0, 1_048_576).describe('Largest file one media tool run may write (prlimit --fsize; 0: uncapped).'),
};
