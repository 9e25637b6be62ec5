// Type test, run by `npm run lint` (tsc): the TypeScript client's `pipelines.create` types each step's
// body as its kind's create body (the types generated from the document's per-kind step bodies), a
// reference {from, output} allowed where an upload id goes and nowhere else. Each `@ts-expect-error`
// line holds a body the gateway refuses; were the types to stop refusing it, tsc would fail on the
// unused directive.
import type { MediaGenClient, PipelineResume } from '@mediagen/client';

type Create = Parameters<MediaGenClient['pipelines']['create']>[0];
type Step = Create['steps'][number];

// What the gateway accepts is accepted: image → video from it as start frame → talking actor over that video.
export const accepted = {
  project_id: 'prj_1',
  steps: [
    { id: 'still', kind: 'image', body: { prompt: 'a lighthouse', model: 'nano-banana-2', aspect_ratio: '16:9', count: 1 } },
    { id: 'clip', kind: 'video', body: { prompt: 'a pan', model: 'seedance-1.5', start_frame_file_id: { from: 'still', output: 0 }, reference_file_ids: [] } },
    { id: 'talk', kind: 'talking_actor', body: { actor_id: 'act_1', script: 'Hello.', background_video_file_id: { from: 'clip', output: 0 } } },
    { id: 'swap', kind: 'replace_actor', body: { image_file_id: 'upl_1', video_file_id: { from: 'clip', output: 0 } } },
  ],
} satisfies Create;

export const refused: Step[] = [
  // @ts-expect-error an image step has no start frame (a video's upload field)
  { id: 'a', kind: 'image', body: { prompt: 'p', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1, start_frame_file_id: 'upl_1' } },
  // @ts-expect-error a video model is not an image step's
  { id: 'b', kind: 'image', body: { prompt: 'p', model: 'seedance-1.5', aspect_ratio: '1:1', count: 1 } },
  // @ts-expect-error a step's project is the pipeline's
  { id: 'c', kind: 'video', body: { prompt: 'p', model: 'seedance-1.5', project_id: 'prj_1' } },
  // @ts-expect-error a step has no webhook of its own
  { id: 'd', kind: 'video', body: { prompt: 'p', model: 'seedance-1.5', webhook_url: 'https://example.com/h' } },
  // @ts-expect-error a reference goes only where an upload id does (not the prompt)
  { id: 'e', kind: 'video', body: { prompt: { from: 'still', output: 0 }, model: 'seedance-1.5' } },
  // @ts-expect-error a reference names its output
  { id: 'f', kind: 'video', body: { prompt: 'p', model: 'seedance-1.5', start_frame_file_id: { from: 'still' } } },
  // @ts-expect-error a talking actor needs its script
  { id: 'g', kind: 'talking_actor', body: { actor_id: 'act_1' } },
];

// A resume's new body is a step body of any kind (the server holds it to the failed step's kind).
export const resumed: PipelineResume[] = [
  { body: { prompt: 'again', model: 'seedance-1.5', start_frame_file_id: { from: 'still', output: 0 } } },
  {},
  // @ts-expect-error not a step body of any kind
  { body: { nope: 1 } },
];
