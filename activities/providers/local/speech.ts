// Speech for the local renderer's talking actor: espeak-ng into a WAV, and the WAV's length.
import { readFile } from 'node:fs/promises';
import { MediaToolError, runTool } from '../media-tools.js';
import { renderRun } from './render-run.js';

/** espeak-ng's default rate in words per minute; `speed` scales it. */
const ESPEAK_BASE_WPM = 175;

/** Speech from text with an espeak-ng voice (e.g. `en-us+f3`) into a WAV file; speed 0.7–1.2 scales the rate. */
export async function synthesizeSpeech(opts: {
  text: string;
  ttsVoice: string;
  speed?: number;
  outPath: string;
  espeakPath?: string;
  signal?: AbortSignal;
}): Promise<{ durationSeconds: number }> {
  const speed = Math.min(2, Math.max(0.5, opts.speed ?? 1));
  const wpm = Math.round(ESPEAK_BASE_WPM * speed);
  if (!/^[A-Za-z0-9_+-]{1,64}$/.test(opts.ttsVoice)) throw new RangeError('invalid espeak-ng voice name');
  // The text goes through stdin, so nothing in it can be read as an option.
  await runTool(opts.espeakPath ?? 'espeak-ng', ['-v', opts.ttsVoice, '-s', String(wpm), '-w', opts.outPath, '--stdin'], {
    stdin: `${opts.text}\n`,
    ...renderRun(opts.signal),
  });
  return { durationSeconds: wavDuration(await readFile(opts.outPath)) };
}

/** Duration of a PCM WAV from its fmt and data chunks. */
export function wavDuration(wav: Buffer): number {
  if (wav.toString('ascii', 0, 4) !== 'RIFF' || wav.toString('ascii', 8, 12) !== 'WAVE') throw new MediaToolError('not a WAV file');
  let pos = 12;
  let byteRate = 0;
  while (pos + 8 <= wav.length) {
    const id = wav.toString('ascii', pos, pos + 4);
    let size = wav.readUInt32LE(pos + 4);
    if (id === 'fmt ') byteRate = wav.readUInt32LE(pos + 16);
    if (id === 'data') {
      // A streamed WAV may leave the size unset (0 or 0xffffffff): use what is actually there.
      if (size === 0 || size === 0xffffffff || pos + 8 + size > wav.length) size = wav.length - pos - 8;
      if (!byteRate) throw new MediaToolError('WAV without a fmt chunk');
      return size / byteRate;
    }
    pos += 8 + size + (size % 2);
  }
  throw new MediaToolError('WAV without a data chunk');
}
