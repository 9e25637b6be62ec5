// The steps the pipeline suites build on: a still image (step `still`), then a clip animated from it
// (step `clip`, the image as its start frame), both rendered by the local renderer.
export const imageStep = (prompt = 'a red lighthouse on a cliff') => ({
  id: 'still',
  kind: 'image',
  body: { prompt, model: 'nano-banana-2', aspect_ratio: '16:9', count: 1 },
});

export const videoStep = (prompt = 'a slow pan') => ({
  id: 'clip',
  kind: 'video',
  body: {
    prompt,
    model: 'seedance-1.5',
    aspect_ratio: '16:9',
    resolution: '480p',
    duration: 4,
    start_frame_file_id: { from: 'still', output: 0 },
  },
});
