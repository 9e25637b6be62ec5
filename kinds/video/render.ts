// The video kind's local rendering (worker code, loaded by the local renderer by the kind's name:
// activities/providers/local/kind-renderer.ts): an MP4 of the asked frame and duration, from the
// start and end frames and the references when given.
import { join } from 'node:path';
import { frameSize } from '../../shared/catalog.js';
import { renderVideo } from '../../activities/providers/local/media.js';
import type { Rendered, RenderJob } from '../../activities/providers/local/kind-renderer.js';

/** The job's one video. */
export async function render({ req, workDir, inputsOf, common, aspect }: RenderJob): Promise<Rendered[]> {
  const dir = await workDir();
  const { width, height } = frameSize(aspect, req.resolution ?? req.route.defaultResolution ?? '720p');
  const starts = await inputsOf('start_frame');
  const startFrame = starts[0] ?? (await inputsOf('image'))[0];
  const endFrame = (await inputsOf('end_frame'))[0];
  const references = await inputsOf('reference');
  const path = join(dir, 'output-0.mp4');
  await renderVideo({
    prompt: req.prompt ?? '',
    width,
    height,
    durationSeconds: req.duration ?? req.route.defaultDuration ?? 5,
    outPath: path,
    references,
    ...(startFrame ? { startFrame } : {}),
    ...(endFrame ? { endFrame } : {}),
    ...common,
  });
  return [{ path, contentType: 'video/mp4', ext: 'mp4' }];
}
