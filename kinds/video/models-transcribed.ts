// The catalog's video models on fal endpoints the pinned @fal-ai/client does not type yet (their
// bodies are checked against transcriptions of fal's pages: providers/fal/contract.ts
// FalTranscribedInputs). shared/catalog.ts has the rules; the `source` of each entry says where.
import type { ModelEntry } from '../../shared/catalog/types.js';

export const transcribedVideoEntries = {
  'kling-3.0-turbo': {
    model: 'kling-3.0-turbo',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/kling-video/v3/turbo/pro/text-to-video',
    falRequest: 'kling-turbo',
    secondaryModelIds: { imageToVideo: 'fal-ai/kling-video/v3/turbo/pro/image-to-video' },
    // fal.ai/models/fal-ai/kling-video/v3/turbo/pro/text-to-video/llms.txt (read 2026-11-27): "high quality
    // 1080p", duration "3" … "15", aspect_ratio 16:9 | 9:16 | 1:1, $0.14 per second; image-to-video takes
    // image_url (the first frame) and names no last frame. The pinned @fal-ai/client has neither endpoint,
    // so their bodies are checked against a transcription (providers/fal/contract.ts FalTranscribedInputs). fal
    // also serves a Standard Turbo at 720p (…/v3/turbo/standard/*, $0.112 per second): not offered here.
    otherRoutes:
      "fal only (fal-ai/kling-video/v3/turbo/pro/*). Kuaishou's own Kling API is not reachable from this build's sources (see kling-3.0). No alternate.",
    source:
      'fal.ai/models/fal-ai/kling-video/v3/turbo/pro/text-to-video/llms.txt and …/image-to-video/llms.txt, read 2026-11-27 (duration 3-15, aspect_ratio 16:9 | 9:16 | 1:1, 1080p, $0.14 per second; prompt best under 2500 characters)',
    takes: {
      // One reference image is the first frame (image-to-video); there is no multi-reference endpoint.
      maxReferenceImages: 1,
      // fal asks for prompts under 2500 characters; longer ones are refused here rather than risked.
      promptChars: { max: 2500 },
      endFrame: false,
    },
    aspectRatios: ['16:9', '9:16', '1:1'],
    defaultAspectRatio: '16:9',
    durations: { min: 3, max: 15 },
    defaultDuration: 5,
    resolutions: ['1080p'],
    defaultResolution: '1080p',
    deadlineSeconds: 1200,
    price: { per: 'second', credits: 7, providerCost: 5 },
  },
  'kling-o3-4k': {
    model: 'kling-o3-4k',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/kling-video/o3/4k/text-to-video',
    falRequest: 'kling-turbo',
    // fal's page (transcribed in providers/fal/contract.ts): generate_audio, no seed or negative_prompt.
    controls: ['audio'],
    // fal.ai/models/fal-ai/kling-video/o3/4k/text-to-video/llms.txt (read 2026-12-02): "directly outputs
    // professional-grade 4K video in one step", duration "3" … "15", aspect_ratio 16:9 | 9:16 | 1:1,
    // $0.42 per second whether audio is on or off (generate_audio defaults to false and is not sent). No
    // resolution field: every output is 4K, labelled 2160p here (the short side of UHD 4K). The pinned
    // @fal-ai/client lacks the endpoint, so its body is checked against a transcription (providers/fal/contract.ts).
    // Text to video only: fal's O3 4K image-to-video page was read only in summary (image_url,
    // end_image_url), not its schema, so image inputs are refused rather than guessed.
    otherRoutes: "fal only (fal-ai/kling-video/o3/4k/*). Kuaishou's own Kling API is not reachable from this build's sources (see kling-3.0). No alternate.",
    source:
      'fal.ai/models/fal-ai/kling-video/o3/4k/text-to-video/llms.txt, read 2026-12-02 (native 4K, duration 3-15, aspect_ratio 16:9 | 9:16 | 1:1, $0.42 per second)',
    takes: {
      imageInputs: false,
    },
    aspectRatios: ['16:9', '9:16', '1:1'],
    defaultAspectRatio: '16:9',
    produces: {
      formats: ['mp4'],
      aspectRatios: ['16:9', '9:16', '1:1'],
      resolutions: ['2160p'],
      source: 'fal.ai/models/fal-ai/kling-video/o3/4k/text-to-video/llms.txt (native 4K MP4 at the asked aspect ratio)',
    },
    durations: { min: 3, max: 15 },
    defaultDuration: 5,
    resolutions: ['2160p'],
    defaultResolution: '2160p',
    deadlineSeconds: 1800,
    // $0.42 a second is 15 credits of provider cost, at the ratio of the other fal video models.
    price: { per: 'second', credits: 22, providerCost: 15 },
  },
  'seedance-2.0': {
    model: 'seedance-2.0',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'bytedance/seedance-2.0/text-to-video',
    falRequest: 'seedance-2',
    // fal's pages (transcribed in providers/fal/contract.ts): seed and generate_audio on text and image to video.
    controls: ['seed', 'audio'],
    secondaryModelIds: { imageToVideo: 'bytedance/seedance-2.0/image-to-video' },
    // fal.ai/models/bytedance/seedance-2.0/text-to-video/llms.txt: resolution 480p | 720p, duration "4" … "15" (or "auto", not offered: a job's length is its
    // price), aspect_ratio 21:9 | 16:9 | 4:3 | 1:1 | 3:4 | 9:16 (or auto), generate_audio at no extra cost;
    // $0.3034 per second at 720p. fal serves it under bytedance/ (no fal-ai/ prefix), which the pinned
    // @fal-ai/client does not type: its body is checked against a transcription (providers/fal/contract.ts).
    // BytePlus ModelArk is the second route for text-to-video jobs (providers/byteplus/descriptor.ts).
    // A start frame (and an optional end frame) goes to fal's image-to-video endpoint (image_url,
    // end_image_url; the same duration, aspect ratio and audio; $0.3024 a second at 720p on the standard
    // tier, $0.2419 on fast, fal.ai/models/bytedance/seedance-2.0/{,fast/}image-to-video, read 2026-12-02).
    // fal's reference-to-video schema was not transcribed: one reference image is the first frame.
    otherRoutes:
      "fal (bytedance/seedance-2.0/*) and BytePlus ModelArk (a task at POST /api/v3/contents/generations/tasks, as seedance-1.5; the model id from BytePlus's own ark-cli; a prepaid resource pack is needed, docs.byteplus.com ModelArk 2291680): two live routes for text-to-video jobs at 480p or 720p, 4-15 s; with failover on such a job moves from one to the other. Jobs with a start or end frame stay on fal (no Ark image roles confirmed from BytePlus's text).",
    source:
      'fal.ai/models/bytedance/seedance-2.0/text-to-video/llms.txt (standard tier: resolution 480p | 720p, duration 4-15, aspect_ratio 21:9 … 9:16, $0.3034 per second at 720p) and …/image-to-video (image_url, end_image_url; $0.3024 per second at 720p)',
    takes: {
      maxReferenceImages: 1,
    },
    aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
    defaultAspectRatio: '16:9',
    produces: {
      formats: ['mp4'],
      aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
      resolutions: ['480p', '720p'],
      source: 'fal.ai/models/bytedance/seedance-2.0/text-to-video/llms.txt (aspect_ratio and resolution of the MP4 answered as asked)',
    },
    durations: { min: 4, max: 15 },
    defaultDuration: 5,
    resolutions: ['480p', '720p'],
    defaultResolution: '720p',
    deadlineSeconds: 1200,
    // One price for both resolutions: the provider cost is 720p's ($0.3034 a second), rounded up in credits.
    price: { per: 'second', credits: 16, providerCost: 11 },
  },
  'seedance-2.0-fast': {
    model: 'seedance-2.0-fast',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'bytedance/seedance-2.0/fast/text-to-video',
    falRequest: 'seedance-2',
    // fal's pages (transcribed in providers/fal/contract.ts): seed and generate_audio on text and image to video.
    controls: ['seed', 'audio'],
    secondaryModelIds: { imageToVideo: 'bytedance/seedance-2.0/fast/image-to-video' },
    // fal.ai/models/bytedance/seedance-2.0/fast/text-to-video/llms.txt: resolution 480p | 720p, duration "4" … "15" (or "auto", not offered: a job's length is its
    // price), aspect_ratio 21:9 | 16:9 | 4:3 | 1:1 | 3:4 | 9:16 (or auto), generate_audio at no extra cost;
    // $0.2419 per second at 720p. fal serves it under bytedance/ (no fal-ai/ prefix), which the pinned
    // @fal-ai/client does not type: its body is checked against a transcription (providers/fal/contract.ts).
    // BytePlus ModelArk is the second route for text-to-video jobs (providers/byteplus/descriptor.ts).
    // A start frame (and an optional end frame) goes to fal's image-to-video endpoint (image_url,
    // end_image_url; the same duration, aspect ratio and audio; $0.3024 a second at 720p on the standard
    // tier, $0.2419 on fast, fal.ai/models/bytedance/seedance-2.0/{,fast/}image-to-video, read 2026-12-02).
    // fal's reference-to-video schema was not transcribed: one reference image is the first frame.
    otherRoutes:
      "fal (bytedance/seedance-2.0/*) and BytePlus ModelArk (a task at POST /api/v3/contents/generations/tasks, as seedance-1.5; the model id from BytePlus's own ark-cli; a prepaid resource pack is needed, docs.byteplus.com ModelArk 2291680): two live routes for text-to-video jobs at 480p or 720p, 4-15 s; with failover on such a job moves from one to the other. Jobs with a start or end frame stay on fal (no Ark image roles confirmed from BytePlus's text).",
    source:
      'fal.ai/models/bytedance/seedance-2.0/fast/text-to-video/llms.txt (fast tier: resolution 480p | 720p, duration 4-15, aspect_ratio 21:9 … 9:16, $0.2419 per second at 720p) and …/fast/image-to-video (image_url, end_image_url, the same price)',
    takes: {
      maxReferenceImages: 1,
    },
    aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
    defaultAspectRatio: '16:9',
    produces: {
      formats: ['mp4'],
      aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
      resolutions: ['480p', '720p'],
      source: 'fal.ai/models/bytedance/seedance-2.0/fast/text-to-video/llms.txt (aspect_ratio and resolution of the MP4 answered as asked)',
    },
    durations: { min: 4, max: 15 },
    defaultDuration: 5,
    resolutions: ['480p', '720p'],
    defaultResolution: '720p',
    deadlineSeconds: 1200,
    // One price for both resolutions: the provider cost is 720p's ($0.2419 a second), rounded up in credits.
    price: { per: 'second', credits: 13, providerCost: 9 },
  },
  'grok-video-1.5': {
    model: 'grok-video-1.5',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'xai/grok-imagine-video/v1.5/image-to-video',
    falRequest: 'grok-1.5',
    // fal.ai/models/xai/grok-imagine-video/v1.5/image-to-video/llms.txt (read 2026-12-02): "Generate videos
    // from images with audio using xAI's Grok Imagine 1.5 Video model"; prompt and image_url required,
    // duration 1 … 15 (default 6), resolution 480p | 720p (default 720p); $0.08 a second at 480p, $0.14 at
    // 720p, $0.01 per input image, audio included. No aspect_ratio field: the video keeps the first frame's
    // shape, as Kling's image-to-video does. fal lists no text-to-video endpoint for 1.5 on a page read
    // here, so the model is image to video only: a job without a first frame is refused at create. The
    // pinned @fal-ai/client lacks the endpoint: its body is checked against a transcription (providers/fal/contract.ts).
    otherRoutes:
      "fal (xai/grok-imagine-video/v1.5/image-to-video) only. xAI serves Grok Imagine Video 1.5 on its own API (Vercel AI Gateway's model page names xai/grok-imagine-video-1.5, with grok-imagine-video-1.5-preview, and links docs.x.ai), but xAI's own model page and its SDKs give no 1.5 model id, limits or price readable here: no xAI route. No alternate.",
    source:
      'fal.ai/models/xai/grok-imagine-video/v1.5/image-to-video/llms.txt, read 2026-12-02 (image to video: prompt, image_url, duration 1-15, resolution 480p | 720p; $0.14 per second at 720p plus $0.01 per input image)',
    takes: {
      startFrame: 'required',
      // The first frame is the start frame or one reference image; there is no end-frame or multi-reference field.
      maxReferenceImages: 1,
      endFrame: false,
    },
    aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '3:2', '2:3'],
    defaultAspectRatio: '16:9',
    servedAs: { aspect_ratio: "the first frame's own shape: fal's 1.5 image-to-video takes no aspect_ratio" },
    durations: { min: 1, max: 15 },
    defaultDuration: 6,
    resolutions: ['480p', '720p'],
    defaultResolution: '720p',
    deadlineSeconds: 1200,
    // One price for both resolutions: the provider cost is 720p's $0.14 a second plus the image's $0.01,
    // which at the shortest job (1 s) is $0.15: 6 credits a second at the ratio of the other fal video models.
    price: { per: 'second', credits: 9, providerCost: 6 },
  },
} as const satisfies Record<string, ModelEntry>;
