// What a job kind's local rendering is given and gives back: each kind's folder has a render.ts
// (kinds/<kind>/render.ts, worker code) exporting `render`, which makes the kind's placeholder media
// on this machine from the request and its inputs. The local renderer (./adapter.ts) loads them by
// the kind's name, as the provider registry loads adapters: a new kind brings its local rendering
// with it, and nothing here changes.
import type { JobKind } from '../../../kinds/index.js';
import { jobKinds } from '../../../kinds/index.js';
import type { ProviderContext, ProviderRequest, InputFile } from '../types.js';
import type { MediaTools } from '../media-tools.js';

/** An output: a file in the job's work directory, or (an image) bytes in memory. */
export type Rendered = { contentType: string; ext: string } & ({ path: string } | { data: Buffer });

/** What a kind's renderer gets: the request, its context, and its inputs of a role downloaded on demand. */
export interface RenderJob {
  req: ProviderRequest;
  ctx: ProviderContext;
  /** Makes the job's temporary directory on first use (images need none). */
  workDir: () => Promise<string>;
  inputsOf: (role: InputFile['role']) => Promise<string[]>;
  common: { ffmpegPath?: string; media: MediaTools; signal: AbortSignal };
  /** The asked aspect ratio, or the route's default. */
  aspect: string;
  /** Whether the fault-injection markers count (LOCAL_RENDER_FAULTS). */
  faults: boolean;
  /** espeak-ng, for kinds that speak. */
  espeakPath: string;
}

/** The module of a kind's render.ts. */
export interface KindRenderModule {
  render(job: RenderJob): Promise<Rendered[]>;
}

/** A kind's folder: its name with `-` for `_`. */
const folderOf = (kind: JobKind) => kind.replaceAll('_', '-');

/** The module path of a kind's render.ts, relative to this file. */
export const renderModulePath = (kind: JobKind) => `../../../kinds/${folderOf(kind)}/render.js`;

// Loaded once, when the local renderer is first imported.
const renderModules = new Map<JobKind, KindRenderModule>(
  await Promise.all(jobKinds.map(async (kind) => [kind, (await import(renderModulePath(kind))) as KindRenderModule] as const)),
);

/** The local rendering of a kind; throws when its folder has none. */
export function kindRenderer(kind: JobKind): KindRenderModule['render'] {
  const module = renderModules.get(kind);
  if (typeof module?.render !== 'function') throw new Error(`the ${kind} kind has no local rendering (kinds/${folderOf(kind)}/render.ts exporting render)`);
  return module.render;
}
