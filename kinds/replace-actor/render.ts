// The replace-actor kind's local rendering (worker code, loaded by the local renderer by the kind's
// name: activities/providers/local/kind-renderer.ts): the character image over the motion video's
// frames.
import { join } from 'node:path';
import { frameSize } from '../../shared/catalog.js';
import { renderReplaceActor } from '../../activities/providers/local/media.js';
import { ProviderError } from '../../activities/providers/types.js';
import type { Rendered, RenderJob } from '../../activities/providers/local/kind-renderer.js';

/** The job's one video. */
export async function render({ req, workDir, inputsOf, common, aspect }: RenderJob): Promise<Rendered[]> {
  const dir = await workDir();
  const { width, height } = frameSize(aspect, '720p');
  const characterImage = (await inputsOf('image'))[0] ?? (await inputsOf('actor_image'))[0];
  const motionVideo = (await inputsOf('video'))[0];
  if (!characterImage || !motionVideo) {
    throw new ProviderError('local renderer: replace actor needs an image and a video input', { retryable: false });
  }
  const path = join(dir, 'output-0.mp4');
  await renderReplaceActor({
    characterImage,
    motionVideo,
    width,
    height,
    durationSeconds: req.duration ?? req.route.defaultDuration ?? 5,
    outPath: path,
    ...common,
  });
  return [{ path, contentType: 'video/mp4', ext: 'mp4' }];
}
