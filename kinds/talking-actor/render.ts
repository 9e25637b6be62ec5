// The talking-actor kind's local rendering (worker code, loaded by the local renderer by the kind's
// name: activities/providers/local/kind-renderer.ts): the script spoken by espeak-ng over the actor's
// image (or a still painted from the script when none is given).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { frameSize } from '../../shared/catalog.js';
import { renderImage, renderTalkingActor, synthesizeSpeech } from '../../activities/providers/local/media.js';
import type { Rendered, RenderJob } from '../../activities/providers/local/kind-renderer.js';

/** espeak-ng's voice when the job's voice names none. */
const DEFAULT_VOICE = 'en-us';

/** The job's one video. */
export async function render({ req, ctx, workDir, inputsOf, common, espeakPath }: RenderJob): Promise<Rendered[]> {
  const dir = await workDir();
  const { width, height } = frameSize(req.aspectRatio ?? '9:16', '720p');
  let actorImage = (await inputsOf('actor_image'))[0] ?? (await inputsOf('image'))[0];
  if (!actorImage) {
    // No reference image given: a stand-in derived from the script keeps the job renderable.
    actorImage = join(dir, 'actor.png');
    await writeFile(actorImage, await renderImage({ prompt: req.script ?? '', width, height, ...common }));
  }
  const audioPath = join(dir, 'speech.wav');
  await synthesizeSpeech({
    text: req.script ?? '',
    ttsVoice: req.voice?.ttsVoice ?? DEFAULT_VOICE,
    speed: req.voiceOptions?.speed ?? 1,
    outPath: audioPath,
    espeakPath,
    signal: ctx.signal,
  });
  ctx.heartbeat({ phase: 'speech' });
  const path = join(dir, 'output-0.mp4');
  await renderTalkingActor({ actorImage, audioPath, width, height, outPath: path, ...common });
  return [{ path, contentType: 'video/mp4', ext: 'mp4' }];
}
