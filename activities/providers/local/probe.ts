// What ffprobe says about a media file the local renderer made (never tenant media: that goes
// through media-tools.ts's capped inspection).
import { runTool } from '../media-tools.js';
import { renderRun } from './render-run.js';

export interface MediaInfo {
  width?: number;
  height?: number;
  durationSeconds?: number;
  videoCodec?: string;
  audioCodec?: string;
  hasAudio: boolean;
  formatName: string;
}

interface FfprobeOutput {
  streams?: { codec_type?: string; codec_name?: string; width?: number; height?: number; duration?: string }[];
  format?: { format_name?: string; duration?: string };
}

/** What ffprobe says about a media file. */
export async function probeMedia(path: string, opts: { ffprobePath?: string; signal?: AbortSignal } = {}): Promise<MediaInfo> {
  const out = await runTool(opts.ffprobePath ?? 'ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', path], {
    stdout: true,
    ...renderRun(opts.signal),
  });
  const json = JSON.parse(out.toString('utf8')) as FfprobeOutput;
  const video = json.streams?.find((s) => s.codec_type === 'video');
  const audio = json.streams?.find((s) => s.codec_type === 'audio');
  const duration = Number(json.format?.duration ?? video?.duration ?? audio?.duration);
  const info: MediaInfo = { hasAudio: Boolean(audio), formatName: json.format?.format_name ?? 'unknown' };
  if (video?.width) info.width = video.width;
  if (video?.height) info.height = video.height;
  if (Number.isFinite(duration)) info.durationSeconds = duration;
  if (video?.codec_name) info.videoCodec = video.codec_name;
  if (audio?.codec_name) info.audioCodec = audio.codec_name;
  return info;
}
