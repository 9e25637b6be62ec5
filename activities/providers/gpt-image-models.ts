// What each GPT image model is asked for and must answer: the one table the request builders
// (openai.ts, azure.ts) and the answer check (images-api.ts) both read, so the size sent and the size
// the answer is held to can never differ.
//
// OpenAI echoes what it generated: openai-node's ImagesResponse (the pinned `openai` package,
// resources/images.d.ts, read 2026-12-02) carries `size` ("the image dimensions as a WIDTHxHEIGHT
// string"), `output_format`, `quality` (the one used: low | medium | high | xhigh | max, `auto`
// resolved) and `background` (transparent | opaque, `auto` resolved). Only `size`, `output_format` and
// `model` (where a host adds it) are held to what was asked: quality and background are left to the
// model's `auto`, and any documented value of theirs is accepted.

/** The sizes of the gpt-image-1 series (square, 3:2, 2:3): 16:9 and 9:16 are served as 3:2 and 2:3 (the catalog's `servedAs`). */
const gptImage1Sizes = { '1:1': '1024x1024', '16:9': '1536x1024', '9:16': '1024x1536' } as const;

/**
 * gpt-image-2 takes any WIDTHxHEIGHT within its limits (providers/openai/contract.ts gptImage2SizeProblem), so
 * each aspect ratio gets its own exact size: the largest OpenAI does not call experimental (at most
 * 2560x1440, and the square with the same pixel count).
 */
export const gptImage2Sizes = { '1:1': '1920x1920', '16:9': '2560x1440', '9:16': '1440x2560' } as const;

interface GptImageModel {
  /** The size sent per aspect ratio; the answer's `size` must be this. */
  sizes: Readonly<Record<string, string>>;
  /** The `output_format` sent; the answer's must be this. */
  outputFormat: 'png';
}

/**
 * Per model id (OpenAI's ImageModel names; a dated snapshot such as gpt-image-2-2026-04-21 is read as
 * its model). A model missing here is refused at submit rather than sent a guessed size.
 */
const gptImageModels: Readonly<Record<string, GptImageModel>> = {
  'gpt-image-1': { sizes: gptImage1Sizes, outputFormat: 'png' },
  'gpt-image-1-mini': { sizes: gptImage1Sizes, outputFormat: 'png' },
  'gpt-image-1.5': { sizes: gptImage1Sizes, outputFormat: 'png' },
  'gpt-image-2': { sizes: gptImage2Sizes, outputFormat: 'png' },
  // openai-node's `size` documentation gives gpt-image-2.5-sunburst / -flare gpt-image-2's arbitrary
  // WIDTHxHEIGHT sizes; gpt-image-2.6-* is not among those models, so it gets the three standard sizes
  // "supported by the GPT image models".
  'gpt-image-2.5-sunburst': { sizes: gptImage2Sizes, outputFormat: 'png' },
  'gpt-image-2.5-flare': { sizes: gptImage2Sizes, outputFormat: 'png' },
  'gpt-image-2.6-sunburst': { sizes: gptImage1Sizes, outputFormat: 'png' },
  'gpt-image-2.6-flare': { sizes: gptImage1Sizes, outputFormat: 'png' },
};

/** The table's row of a model id, a dated snapshot (`<model>-YYYY-MM-DD`) read as its model. */
function gptImageModel(model: string): GptImageModel | undefined {
  return gptImageModels[model] ?? gptImageModels[model.replace(/-\d{4}-\d{2}-\d{2}$/, '')];
}

/** What a generation of `model` at `aspectRatio` is asked for: the request's size and format, and what the answer must echo. */
export interface GptImageAsk {
  model: string;
  size: string;
  outputFormat: 'png';
}

export function gptImageAsk(model: string, aspectRatio: string): GptImageAsk | undefined {
  const row = gptImageModel(model);
  if (!row) return undefined;
  return { model, size: row.sizes[aspectRatio] ?? row.sizes['1:1']!, outputFormat: row.outputFormat };
}
