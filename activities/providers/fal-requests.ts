// fal request bodies: one builder per documented fal input schema family (the catalog entry's
// `falRequest` names its own), built against fal's input types (contracts/fal.ts) with `satisfies`.
import type { InputFile, ProviderContext, ProviderRequest } from './types.js';
import { ProviderError } from './types.js';
import type { FalInput } from './contracts/fal.js';
import type { FalRequestShape } from '../../shared/catalog.js';
const byRole = (inputs: InputFile[], ...roles: InputFile['role'][]) => inputs.filter((i) => roles.includes(i.role));

type FalRequest = { endpointId: string; input: Record<string, unknown> };

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

async function imageEdit(c: BuildContext) {
  const refs = byRole(c.req.inputs, 'reference', 'image');
  const edit = refs.length && c.secondary.edit ? { image_urls: await c.urls(refs) } : undefined;
  return { edit, endpointId: edit ? c.secondary.edit! : c.endpointId, count: c.req.count ?? 1 };
}

/** One builder per documented fal input schema family; each catalog entry names its own (falRequest). */
const falRequestBuilders: Record<FalRequestShape, (c: BuildContext) => Promise<FalRequest>> = {
  async 'nano-banana'(c) {
    const { edit, endpointId, count } = await imageEdit(c);
    return {
      endpointId,
      input: {
        prompt: c.prompt,
        num_images: count,
        aspect_ratio: c.aspectRatio as FalInput<'fal-ai/nano-banana-2'>['aspect_ratio'],
        output_format: 'png',
        ...edit,
      } satisfies FalInput<'fal-ai/nano-banana-2'> | FalInput<'fal-ai/nano-banana-2/edit'>,
    };
  },

  async seedream(c) {
    const { edit, endpointId, count } = await imageEdit(c);
    return {
      endpointId,
      input: { prompt: c.prompt, num_images: count, image_size: seedreamImageSize(c.aspectRatio), ...edit } satisfies
        FalInput<'fal-ai/bytedance/seedream/v4.5/edit'> | FalInput<'fal-ai/bytedance/seedream/v4.5/text-to-image'>,
    };
  },

  async 'wan-animate-replace'(c) {
    const [video] = byRole(c.req.inputs, 'video');
    const [image] = byRole(c.req.inputs, 'image', 'actor_image', 'reference');
    if (!video || !image) throw new ProviderError('replace-actor needs a character image and a motion video', { retryable: false });
    // Wan Animate Replace takes no prompt: the motion video and the character image drive it.
    return {
      endpointId: c.endpointId,
      input: {
        video_url: await c.url(video),
        image_url: await c.url(image),
        resolution: c.resolution as FalInput<'fal-ai/wan/v2.2-14b/animate/replace'>['resolution'],
      } satisfies FalInput<'fal-ai/wan/v2.2-14b/animate/replace'>,
    };
  },

  async veo(c) {
    const { first, end, refs } = videoFrames(c);
    const { secondary, url } = c;
    type Veo = FalInput<'fal-ai/veo3.1'>;
    const base = { prompt: c.prompt, duration: `${c.duration}s` as Veo['duration'], resolution: c.resolution as Veo['resolution'], generate_audio: true };
    const ratio = c.aspectRatio as NonNullable<Veo['aspect_ratio']>;
    if (first && end && secondary.firstLastFrame) {
      return {
        endpointId: secondary.firstLastFrame,
        input: {
          ...base,
          aspect_ratio: ratio,
          first_frame_url: await url(first),
          last_frame_url: await url(end),
        } satisfies FalInput<'fal-ai/veo3.1/first-last-frame-to-video'>,
      };
    }
    if (first && secondary.imageToVideo)
      return {
        endpointId: secondary.imageToVideo,
        input: { ...base, aspect_ratio: ratio, image_url: await url(first) } satisfies FalInput<'fal-ai/veo3.1/image-to-video'>,
      };
    if (refs.length && secondary.reference) {
      return {
        endpointId: secondary.reference,
        input: { ...base, aspect_ratio: ratio, image_urls: await c.urls(refs) } satisfies FalInput<'fal-ai/veo3.1/reference-to-video'>,
      };
    }
    return { endpointId: c.endpointId, input: { ...base, aspect_ratio: ratio } satisfies Veo };
  },

  async kling(c) {
    const { first, end } = videoFrames(c);
    type Kling = FalInput<'fal-ai/kling-video/v3/pro/text-to-video'>;
    const base = {
      prompt: c.prompt,
      duration: String(c.duration) as NonNullable<Kling['duration']> & NonNullable<FalInput<'fal-ai/kling-video/v2.6/pro/text-to-video'>['duration']>,
      generate_audio: true,
    };
    if (first && c.secondary.imageToVideo) {
      return {
        endpointId: c.secondary.imageToVideo,
        input: {
          ...base,
          start_image_url: await c.url(first),
          ...(end ? { end_image_url: await c.url(end) } : {}),
        } satisfies FalInput<'fal-ai/kling-video/v3/pro/image-to-video'> & FalInput<'fal-ai/kling-video/v2.6/pro/image-to-video'>,
      };
    }
    return {
      endpointId: c.endpointId,
      input: { ...base, aspect_ratio: c.aspectRatio as Kling['aspect_ratio'] } satisfies Kling & FalInput<'fal-ai/kling-video/v2.6/pro/text-to-video'>,
    };
  },

  // Kling 3.0 Turbo: its own schema (fal.ai/models/fal-ai/kling-video/v3/turbo/pro/*/llms.txt): the first
  // frame is `image_url`; the pages list no generate_audio, aspect ratio on image-to-video, or end frame.
  async 'kling-turbo'(c) {
    const { first } = videoFrames(c);
    type Turbo = FalInput<'fal-ai/kling-video/v3/turbo/pro/text-to-video'>;
    const duration = String(c.duration) as NonNullable<Turbo['duration']>;
    if (first && c.secondary.imageToVideo) {
      return {
        endpointId: c.secondary.imageToVideo,
        input: { prompt: c.prompt, image_url: await c.url(first), duration } satisfies FalInput<'fal-ai/kling-video/v3/turbo/pro/image-to-video'>,
      };
    }
    return {
      endpointId: c.endpointId,
      input: { prompt: c.prompt, duration, aspect_ratio: c.aspectRatio as Turbo['aspect_ratio'] } satisfies Turbo,
    };
  },

  async seedance(c) {
    const { first, end } = videoFrames(c);
    type Seedance = FalInput<'fal-ai/bytedance/seedance/v1.5/pro/text-to-video'>;
    const base = {
      prompt: c.prompt,
      duration: String(c.duration) as Seedance['duration'],
      resolution: c.resolution as Seedance['resolution'],
      aspect_ratio: c.aspectRatio as Seedance['aspect_ratio'],
    } satisfies Seedance;
    if (first && c.secondary.imageToVideo) {
      return {
        endpointId: c.secondary.imageToVideo,
        input: {
          ...base,
          image_url: await c.url(first),
          ...(end ? { end_image_url: await c.url(end) } : {}),
        } satisfies FalInput<'fal-ai/bytedance/seedance/v1.5/pro/image-to-video'>,
      };
    }
    return { endpointId: c.endpointId, input: base };
  },

  async grok(c) {
    const { first } = videoFrames(c);
    type Grok = FalInput<'xai/grok-imagine-video/text-to-video'>;
    const base = { prompt: c.prompt, duration: c.duration, resolution: c.resolution as Grok['resolution'] };
    if (first && c.secondary.imageToVideo)
      return {
        endpointId: c.secondary.imageToVideo,
        input: { ...base, image_url: await c.url(first) } satisfies FalInput<'xai/grok-imagine-video/image-to-video'>,
      };
    return { endpointId: c.endpointId, input: { ...base, aspect_ratio: c.aspectRatio as Grok['aspect_ratio'] } satisfies Grok };
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
