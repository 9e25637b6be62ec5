// The image kind's local rendering (worker code, loaded by the local renderer by the kind's name:
// activities/providers/local/kind-renderer.ts): gradient PNGs painted from the prompt, one per image
// asked for.
import { imageSize } from '../../shared/catalog.js';
import { renderImage } from '../../activities/providers/local/media.js';
import type { Rendered, RenderJob } from '../../activities/providers/local/kind-renderer.js';

/** The job's images, in memory (about 100 KB each). */
export async function render({ req, ctx, common, aspect, faults }: RenderJob): Promise<Rendered[]> {
  const { width, height } = imageSize(aspect);
  const asked = Math.max(1, Math.min(16, req.count ?? 1));
  // [outputs:N]: a provider that answers with fewer images than asked (N of them).
  const fewer = faults ? /\[outputs:(\d+)\]/.exec(req.prompt ?? '') : null;
  const count = fewer ? Math.min(asked, Number(fewer[1])) : asked;
  const images: Rendered[] = [];
  for (let n = 0; n < count; n++) {
    // About 100 KB each: kept in memory and stored from there, no temporary file.
    images.push({
      data: await renderImage({ prompt: req.prompt ?? '', width, height, seed: n, format: 'png', ...common }),
      contentType: 'image/png',
      ext: 'png',
    });
    ctx.heartbeat({ phase: 'render', done: n + 1, of: count });
  }
  return images;
}
