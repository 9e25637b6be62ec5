// fal request bodies: one builder per documented fal input schema family (the catalog entry's
// `falRequest` names its own). Each builder sends only to the endpoints `falBuilderEndpoints` lists for
// it, by role (`main` is the route's own endpoint; the other roles are the catalog's
// `secondaryModelIds` keys): an endpoint the catalog names that the list lacks fails the job clearly.
// Every body goes through `falBody(endpointId)(input)`, which checks it against fal's own input type
// (providers/fal/contract.ts) of every endpoint the id may be: the values must be ones fal takes, and no field,
// however it reached the body (a spread included), may be one an endpoint lacks (body-check.ts).
// Values from the catalog or the request are narrowed to fal's enums with `oneOf`, never cast.
//
// Adding a model served by an existing family: add its endpoint ids to the family's roles here (and to
// providers/fal/contract.ts falEndpoints); the compiler then checks the family's bodies against the new types.
import type { InputFile, ProviderContext, ProviderRequest } from '../../activities/providers/types.js';
import { ProviderError } from '../../activities/providers/types.js';
import { infinitalkFps, infinitalkMaxFrames, lipsyncFrames, type FalEndpointId, type FalInput } from './contract.js';
import type { FalRequestShape } from '../../shared/catalog.js';
import { allOf, oneOf, type ExtraKeys } from '../../activities/providers/body-check.js';
const byRole = (inputs: InputFile[], ...roles: InputFile['role'][]) => inputs.filter((i) => roles.includes(i.role));

type FalRequest = { endpointId: string; input: Record<string, unknown> };

/** The fal endpoints each builder may send to, by role. */
export const falBuilderEndpoints = {
  'nano-banana': { main: ['fal-ai/nano-banana-2'], edit: ['fal-ai/nano-banana-2/edit'] },
  seedream: {
    main: ['fal-ai/bytedance/seedream/v4.5/text-to-image', 'fal-ai/bytedance/seedream/v5/lite/text-to-image'],
    edit: ['fal-ai/bytedance/seedream/v4.5/edit', 'fal-ai/bytedance/seedream/v5/lite/edit'],
  },
  'wan-animate-replace': { main: ['fal-ai/wan/v2.2-14b/animate/replace'] },
  veo: {
    main: ['fal-ai/veo3.1', 'fal-ai/veo3.1/fast', 'fal-ai/veo3.1/lite'],
    imageToVideo: ['fal-ai/veo3.1/image-to-video', 'fal-ai/veo3.1/fast/image-to-video', 'fal-ai/veo3.1/lite/image-to-video'],
    firstLastFrame: ['fal-ai/veo3.1/first-last-frame-to-video', 'fal-ai/veo3.1/fast/first-last-frame-to-video', 'fal-ai/veo3.1/lite/first-last-frame-to-video'],
    reference: ['fal-ai/veo3.1/reference-to-video'],
  },
  kling: {
    main: ['fal-ai/kling-video/v3/pro/text-to-video', 'fal-ai/kling-video/v2.6/pro/text-to-video'],
    imageToVideo: ['fal-ai/kling-video/v3/pro/image-to-video', 'fal-ai/kling-video/v2.6/pro/image-to-video'],
  },
  seedance: { main: ['fal-ai/bytedance/seedance/v1.5/pro/text-to-video'], imageToVideo: ['fal-ai/bytedance/seedance/v1.5/pro/image-to-video'] },
  // Kling O3 4K's text-to-video takes the Turbo's text-to-video fields (prompt, duration, aspect_ratio).
  'kling-turbo': {
    main: ['fal-ai/kling-video/v3/turbo/pro/text-to-video', 'fal-ai/kling-video/o3/4k/text-to-video'],
    imageToVideo: ['fal-ai/kling-video/v3/turbo/pro/image-to-video'],
  },
  'seedance-2': {
    main: ['bytedance/seedance-2.0/text-to-video', 'bytedance/seedance-2.0/fast/text-to-video'],
    imageToVideo: ['bytedance/seedance-2.0/image-to-video', 'bytedance/seedance-2.0/fast/image-to-video'],
  },
  grok: { main: ['xai/grok-imagine-video/text-to-video'], imageToVideo: ['xai/grok-imagine-video/image-to-video'] },
  // Grok Imagine Video 1.5 is image to video only: its route's own endpoint takes the first frame.
  'grok-1.5': { main: ['xai/grok-imagine-video/v1.5/image-to-video'] },
  infinitalk: { main: ['fal-ai/infinitalk'] },
} as const satisfies Record<FalRequestShape, { main: readonly FalEndpointId[] } & Record<string, readonly FalEndpointId[]>>;

type Endpoints = typeof falBuilderEndpoints;
export type EndpointOf<S extends FalRequestShape, R extends keyof Endpoints[S]> = Endpoints[S][R] extends readonly (infer E)[] ? E : never;

/** Fields of `B` that one of the endpoints `E` lacks. */
type FalExtraKeys<E extends FalEndpointId, B> = E extends FalEndpointId ? ExtraKeys<B, FalInput<E>> : never;

/**
 * The request for `endpointId` with `input` checked against fal's type of every endpoint the id may be:
 * its values one of them takes, and no field any of them lacks.
 */
export function falBody<E extends FalEndpointId>(endpointId: E) {
  return <B extends FalInput<E>>(
    input: B & ([FalExtraKeys<E, B>] extends [never] ? unknown : { 'fields a fal endpoint lacks': FalExtraKeys<E, B> }),
  ): FalRequest => ({ endpointId, input: input as Record<string, unknown> });
}

/** What every builder works from: the request with the route's defaults filled in, and URL helpers. */
interface BuildContext {
  req: ProviderRequest;
  /** The endpoint id of the stored route (the model's own; a builder may pick a secondary one). */
  endpointId: string;
  secondary: Record<string, string>;
  prompt: string;
  aspectRatio: string;
  resolution: string | undefined;
  duration: number | undefined;
  url(f: InputFile): Promise<string>;
  urls(fs: InputFile[]): Promise<string[]>;
  /** A stored object's presigned URL (the speech a speech step stored). */
  keyUrl(key: string): Promise<string>;
}

/**
 * The endpoint the catalog gives `shape` for `role` (`main`: the route's own), narrowed to the ones
 * the builder is checked against; undefined when the catalog gives none for a secondary role.
 */
function endpointFor<S extends FalRequestShape, R extends keyof Endpoints[S] & string>(c: BuildContext, shape: S, role: R): EndpointOf<S, R> | undefined {
  const id = role === 'main' ? c.endpointId : c.secondary[role];
  if (id === undefined) return undefined;
  const allowed = falBuilderEndpoints[shape][role] as readonly string[];
  if (allowed.includes(id)) return id as EndpointOf<S, R>;
  throw new ProviderError(`fal: the catalog names ${id} as the ${role} endpoint of a ${shape} request, which its builder is not checked against`, {
    retryable: false,
  });
}

function mainEndpoint<S extends FalRequestShape>(c: BuildContext, shape: S): EndpointOf<S, 'main' & keyof Endpoints[S]> {
  return endpointFor(c, shape, 'main' as 'main' & keyof Endpoints[S] & string)!;
}

/**
 * The video inputs every video builder reads: first frame (the start frame, or the reference image on
 * a route without a reference endpoint), last frame, references. Where a reference endpoint exists,
 * every reference goes there, so a reference is never silently turned into a first frame.
 */
function videoFrames(c: BuildContext) {
  const [start] = byRole(c.req.inputs, 'start_frame');
  const [end] = byRole(c.req.inputs, 'end_frame');
  const refs = byRole(c.req.inputs, 'reference', 'image');
  const first = start ?? (c.secondary.reference ? undefined : refs[0]);
  return { first, end, refs };
}

// fal's enums, as lists: `allOf` makes the compiler refuse a list that misses a value of the type or
// adds one. `Common`: the values every endpoint of a builder takes (so one narrowing serves each body
// it builds); `AnyOf`: the values some endpoint takes, where versions differ (Kling 3.0 renders 3–15 s,
// Kling 2.6 5 or 10 s): there the catalog's own values for each model keep a request inside its
// endpoint's enum (test/types/catalog-fal-values.ts proves it), and the fake fal server refuses any other.
export type FieldTuple<S extends FalRequestShape, F extends string> =
  EndpointOf<S, keyof Endpoints[S]> extends infer E
    ? E extends FalEndpointId
      ? F extends keyof FalInput<E>
        ? [NonNullable<FalInput<E>[F]>]
        : never
      : never
    : never;
type Intersect<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
export type Common<S extends FalRequestShape, F extends string> =
  Intersect<FieldTuple<S, F>> extends readonly [unknown] ? Intersect<FieldTuple<S, F>>[0] & string : never;
type AnyOf<S extends FalRequestShape, F extends string> = FieldTuple<S, F>[0] & string;

const nanoRatios = allOf<Common<'nano-banana', 'aspect_ratio'>>()([
  'auto',
  '21:9',
  '16:9',
  '3:2',
  '4:3',
  '5:4',
  '1:1',
  '4:5',
  '3:4',
  '2:3',
  '9:16',
  '4:1',
  '1:4',
  '8:1',
  '1:8',
]);
const wanResolutions = allOf<Common<'wan-animate-replace', 'resolution'>>()(['480p', '580p', '720p']);
const veoRatios = allOf<Common<'veo', 'aspect_ratio'>>()(['16:9', '9:16']);
const veoResolutions = allOf<Common<'veo', 'resolution'>>()(['720p', '1080p']);
// Veo reference-to-video types its duration as any string; its schema allows "8s" only (catalog referenceDurations).
const veoDurations = allOf<Common<'veo', 'duration'>>()(['4s', '6s', '8s']);
const klingRatios = allOf<Common<'kling', 'aspect_ratio'>>()(['16:9', '9:16', '1:1']);
const klingDurations = allOf<AnyOf<'kling', 'duration'>>()(['3', '4', '5', '6', '7', '8', '9', '10', '11', '12', '13', '14', '15']);
const klingTurboRatios = allOf<Common<'kling-turbo', 'aspect_ratio'>>()(['16:9', '9:16', '1:1']);
const klingTurboDurations = allOf<Common<'kling-turbo', 'duration'>>()(['3', '4', '5', '6', '7', '8', '9', '10', '11', '12', '13', '14', '15']);
const seedanceRatios = allOf<Common<'seedance', 'aspect_ratio'>>()(['auto', '21:9', '16:9', '4:3', '1:1', '3:4', '9:16']);
const seedanceResolutions = allOf<Common<'seedance', 'resolution'>>()(['480p', '720p', '1080p']);
const seedanceDurations = allOf<Common<'seedance', 'duration'>>()(['4', '5', '6', '7', '8', '9', '10', '11', '12']);
const seedance2Ratios = allOf<Common<'seedance-2', 'aspect_ratio'>>()(['auto', '21:9', '16:9', '4:3', '1:1', '3:4', '9:16']);
const seedance2Resolutions = allOf<Common<'seedance-2', 'resolution'>>()(['480p', '720p']);
const seedance2Durations = allOf<Common<'seedance-2', 'duration'>>()(['auto', '4', '5', '6', '7', '8', '9', '10', '11', '12', '13', '14', '15']);
const grokRatios = allOf<Common<'grok', 'aspect_ratio'>>()(['16:9', '4:3', '3:2', '1:1', '2:3', '3:4', '9:16']);
const grokResolutions = allOf<Common<'grok', 'resolution'>>()(['480p', '720p']);
const grok15Resolutions = allOf<Common<'grok-1.5', 'resolution'>>()(['480p', '720p']);
const infinitalkResolutions = allOf<Common<'infinitalk', 'resolution'>>()(['480p', '720p']);

/** The seed and negative prompt fields the create asked for (only on routes whose catalog `controls` list them). */
const seedOf = (c: BuildContext) => (c.req.seed !== undefined ? { seed: c.req.seed } : {});
const negativeOf = (c: BuildContext) => (c.req.negativePrompt !== undefined ? { negative_prompt: c.req.negativePrompt } : {});

const pick = <const L extends readonly (string | number)[]>(field: string, allowed: L, value: string | number | undefined) =>
  oneOf('fal', field, allowed, value);

/** One builder per documented fal input schema family; each catalog entry names its own (falRequest). */
const falRequestBuilders: Record<FalRequestShape, (c: BuildContext) => Promise<FalRequest>> = {
  async 'nano-banana'(c) {
    const refs = byRole(c.req.inputs, 'reference', 'image');
    const body = {
      prompt: c.prompt,
      num_images: c.req.count ?? 1,
      aspect_ratio: pick('aspect_ratio', nanoRatios, c.aspectRatio),
      output_format: 'png' as const,
      ...seedOf(c),
    };
    const edit = refs.length ? endpointFor(c, 'nano-banana', 'edit') : undefined;
    if (edit) return falBody(edit)({ ...body, image_urls: await c.urls(refs) });
    return falBody(mainEndpoint(c, 'nano-banana'))(body);
  },

  async seedream(c) {
    const refs = byRole(c.req.inputs, 'reference', 'image');
    const body = { prompt: c.prompt, num_images: c.req.count ?? 1, image_size: seedreamImageSize(c.aspectRatio) };
    const edit = refs.length ? endpointFor(c, 'seedream', 'edit') : undefined;
    // Seedream 4.5's endpoints take a seed; 5.0 Lite's do not (the catalog lists the control for 4.5 only).
    if (edit === 'fal-ai/bytedance/seedream/v4.5/edit') return falBody(edit)({ ...body, ...seedOf(c), image_urls: await c.urls(refs) });
    if (edit) return falBody(edit)({ ...body, image_urls: await c.urls(refs) });
    const main = mainEndpoint(c, 'seedream');
    if (main === 'fal-ai/bytedance/seedream/v4.5/text-to-image') return falBody(main)({ ...body, ...seedOf(c) });
    return falBody(main)(body);
  },

  async 'wan-animate-replace'(c) {
    const [video] = byRole(c.req.inputs, 'video');
    const [image] = byRole(c.req.inputs, 'image', 'actor_image', 'reference');
    if (!video || !image) throw new ProviderError('replace-actor needs a character image and a motion video', { retryable: false });
    // Wan Animate Replace takes no prompt: the motion video and the character image drive it.
    return falBody(mainEndpoint(c, 'wan-animate-replace'))({
      video_url: await c.url(video),
      image_url: await c.url(image),
      resolution: pick('resolution', wanResolutions, c.resolution),
    });
  },

  async veo(c) {
    const { first, end, refs } = videoFrames(c);
    const base = {
      prompt: c.prompt,
      duration: pick('duration', veoDurations, `${c.duration}s`),
      resolution: pick('resolution', veoResolutions, c.resolution),
      aspect_ratio: pick('aspect_ratio', veoRatios, c.aspectRatio),
      generate_audio: c.req.audio ?? true,
    };
    // Every endpoint but reference-to-video takes a seed and a negative prompt (the catalog's referenceControls).
    const steered = { ...base, ...seedOf(c), ...negativeOf(c) };
    const firstLast = first && end ? endpointFor(c, 'veo', 'firstLastFrame') : undefined;
    if (first && end && firstLast) return falBody(firstLast)({ ...steered, first_frame_url: await c.url(first), last_frame_url: await c.url(end) });
    const imageToVideo = first ? endpointFor(c, 'veo', 'imageToVideo') : undefined;
    if (first && imageToVideo) return falBody(imageToVideo)({ ...steered, image_url: await c.url(first) });
    const reference = refs.length ? endpointFor(c, 'veo', 'reference') : undefined;
    if (reference) return falBody(reference)({ ...base, image_urls: await c.urls(refs) });
    return falBody(mainEndpoint(c, 'veo'))(steered);
  },

  async kling(c) {
    const { first, end } = videoFrames(c);
    const base = {
      prompt: c.prompt,
      duration: pick('duration', klingDurations, String(c.duration)),
      generate_audio: c.req.audio ?? true,
      ...negativeOf(c),
    };
    const imageToVideo = first ? endpointFor(c, 'kling', 'imageToVideo') : undefined;
    if (first && imageToVideo) {
      // Kling's image-to-video endpoints take no aspect_ratio (fal's input types, v3 and v2.6): the
      // video keeps the start image's shape.
      return falBody(imageToVideo)({ ...base, start_image_url: await c.url(first), ...(end ? { end_image_url: await c.url(end) } : {}) });
    }
    return falBody(mainEndpoint(c, 'kling'))({ ...base, aspect_ratio: pick('aspect_ratio', klingRatios, c.aspectRatio) });
  },

  // Kling 3.0 Turbo: its own schema (fal.ai/models/fal-ai/kling-video/v3/turbo/pro/*/llms.txt): the first
  // frame is `image_url`; the pages list no generate_audio, aspect ratio on image-to-video, or end frame.
  async 'kling-turbo'(c) {
    const { first } = videoFrames(c);
    const duration = pick('duration', klingTurboDurations, String(c.duration));
    const imageToVideo = first ? endpointFor(c, 'kling-turbo', 'imageToVideo') : undefined;
    if (first && imageToVideo) return falBody(imageToVideo)({ prompt: c.prompt, image_url: await c.url(first), duration });
    const main = mainEndpoint(c, 'kling-turbo');
    const body = { prompt: c.prompt, duration, aspect_ratio: pick('aspect_ratio', klingTurboRatios, c.aspectRatio) };
    // Kling O3 4K has the audio switch (off by default on fal); the Turbo has none (the catalog's controls).
    if (main === 'fal-ai/kling-video/o3/4k/text-to-video' && c.req.audio !== undefined) return falBody(main)({ ...body, generate_audio: c.req.audio });
    return falBody(main)(body);
  },

  async seedance(c) {
    const { first, end } = videoFrames(c);
    const base = {
      prompt: c.prompt,
      duration: pick('duration', seedanceDurations, String(c.duration)),
      resolution: pick('resolution', seedanceResolutions, c.resolution),
      aspect_ratio: pick('aspect_ratio', seedanceRatios, c.aspectRatio),
      // fal's default (audio) unless the create said; the seed where asked.
      ...(c.req.audio !== undefined ? { generate_audio: c.req.audio } : {}),
      ...seedOf(c),
    };
    const imageToVideo = first ? endpointFor(c, 'seedance', 'imageToVideo') : undefined;
    if (first && imageToVideo) {
      return falBody(imageToVideo)({ ...base, image_url: await c.url(first), ...(end ? { end_image_url: await c.url(end) } : {}) });
    }
    return falBody(mainEndpoint(c, 'seedance'))(base);
  },

  // Seedance 2.0 (fal.ai/models/bytedance/seedance-2.0/*/text-to-video/llms.txt): text to video only here
  // (the catalog refuses image inputs: no image-to-video schema was transcribed). Audio is generated at the
  // same price either way (fal's page), so it is asked for, as for the other Seedance.
  async 'seedance-2'(c) {
    const { first, end } = videoFrames(c);
    const base = {
      prompt: c.prompt,
      duration: pick('duration', seedance2Durations, String(c.duration)),
      resolution: pick('resolution', seedance2Resolutions, c.resolution),
      aspect_ratio: pick('aspect_ratio', seedance2Ratios, c.aspectRatio),
      generate_audio: c.req.audio ?? true,
      ...seedOf(c),
    };
    const imageToVideo = first ? endpointFor(c, 'seedance-2', 'imageToVideo') : undefined;
    if (first && imageToVideo) {
      return falBody(imageToVideo)({ ...base, image_url: await c.url(first), ...(end ? { end_image_url: await c.url(end) } : {}) });
    }
    return falBody(mainEndpoint(c, 'seedance-2'))(base);
  },

  async grok(c) {
    const { first } = videoFrames(c);
    // Both Grok endpoints take aspect_ratio (image-to-video too, where it defaults to the image's,
    // "auto"): the asked one is sent, as xAI's own route sends it.
    const base = {
      prompt: c.prompt,
      duration: c.duration,
      resolution: pick('resolution', grokResolutions, c.resolution),
      aspect_ratio: pick('aspect_ratio', grokRatios, c.aspectRatio),
    };
    const imageToVideo = first ? endpointFor(c, 'grok', 'imageToVideo') : undefined;
    if (first && imageToVideo) return falBody(imageToVideo)({ ...base, image_url: await c.url(first) });
    return falBody(mainEndpoint(c, 'grok'))(base);
  },

  // Grok Imagine Video 1.5 (fal.ai/models/xai/grok-imagine-video/v1.5/image-to-video/llms.txt): prompt,
  // image_url, duration, resolution; no aspect_ratio, the video keeps the first frame's shape. The
  // catalog refuses a job without a first frame at create (startFrame 'required').
  async 'grok-1.5'(c) {
    const { first } = videoFrames(c);
    if (!first) throw new ProviderError(`${c.req.route.model} needs a first frame (image to video only)`, { retryable: false });
    return falBody(mainEndpoint(c, 'grok-1.5'))({
      prompt: c.prompt,
      image_url: await c.url(first),
      duration: c.duration,
      resolution: pick('resolution', grok15Resolutions, c.resolution),
    });
  },

  // InfiniteTalk (fal.ai/models/fal-ai/infinitalk): the actor's image (cropped to the aspect ratio by the
  // adapter) and the speech step's audio. At most 721 frames (28.8 s at 25 fps): longer scripts are refused
  // at create, and speech that still comes out longer fails the job (refunded) rather than being cut short.
  async infinitalk(c) {
    const [image] = byRole(c.req.inputs, 'actor_image', 'image');
    const speech = c.req.speech;
    if (!image || !speech) throw new ProviderError("a talking actor's lipsync needs the actor's image and the speech step's audio", { retryable: false });
    const numFrames = lipsyncFrames(speech.seconds);
    if (numFrames === undefined) {
      throw new ProviderError(
        `the speech lasts ${speech.seconds.toFixed(1)} s, longer than the ${((infinitalkMaxFrames - 1) / infinitalkFps).toFixed(1)} s one lipsync video can carry; use a shorter script`,
        { retryable: false },
      );
    }
    return falBody(mainEndpoint(c, 'infinitalk'))({
      image_url: await c.url(image),
      audio_url: await c.keyUrl(speech.key),
      prompt: c.req.prompt ?? 'A person talking naturally to the camera.',
      resolution: pick('resolution', infinitalkResolutions, c.resolution),
      num_frames: numFrames,
    });
  },
};

/** The fal endpoint and input body for a job, by the builder its catalog entry names. */
export async function falRequestFor(req: ProviderRequest, ctx: ProviderContext): Promise<FalRequest> {
  const route = req.route;
  if (!route.falRequest) throw new ProviderError(`${route.model} has no fal request builder in the catalog`, { retryable: false });
  const url = (f: InputFile) => ctx.inputUrl(f.key);
  return falRequestBuilders[route.falRequest]({
    req,
    endpointId: req.providerModelId ?? route.providerModelId,
    secondary: route.secondaryModelIds ?? {},
    prompt: req.prompt ?? '',
    aspectRatio: req.aspectRatio ?? route.defaultAspectRatio,
    resolution: req.resolution ?? route.defaultResolution,
    duration: req.duration ?? route.defaultDuration,
    url,
    urls: (fs) => Promise.all(fs.map(url)),
    keyUrl: (key) => ctx.inputUrl(key),
  });
}

/**
 * Seedream 4.5's image_size for an aspect ratio: explicit sizes, because its presets (square_hd is
 * 1024×1024) fall below the model's documented minimum of 2560×1440 pixels.
 */
export function seedreamImageSize(aspectRatio: string): { width: number; height: number } {
  switch (aspectRatio) {
    case '16:9':
      return { width: 2560, height: 1440 };
    case '9:16':
      return { width: 1440, height: 2560 };
    default:
      return { width: 2048, height: 2048 };
  }
}
