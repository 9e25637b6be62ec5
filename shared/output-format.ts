// The image output format a create asks for (docs/api/generation-controls.md): `output_format`
// (png, jpeg or webp; png by default) and, for the lossy two, `output_quality` (1–100). Every image
// route takes them: the providers are asked for PNG as before, and the output store re-encodes the
// stored image into the asked format (activities/providers/output-conform.ts), so each route of a
// model stores the same thing and failover is unchanged. Pure data and zod: the gateway, the workers
// and the document read it alike.
import { z } from 'zod';

export const imageOutputFormats = ['png', 'jpeg', 'webp'] as const;
type ImageOutputFormat = (typeof imageOutputFormats)[number];

/** Each format's media type and file extension. */
export const imageFormatFiles: Readonly<Record<ImageOutputFormat, { mime: string; ext: string }>> = {
  png: { mime: 'image/png', ext: 'png' },
  jpeg: { mime: 'image/jpeg', ext: 'jpg' },
  webp: { mime: 'image/webp', ext: 'webp' },
};

/** The create-body fields, each described for the document. */
export const outputFormatRequestFields = {
  output_format: z
    .enum(imageOutputFormats)
    .optional()
    .describe(
      'the stored image format: png (lossless, the default), jpeg or webp. Every route takes it (the image is re-encoded once stored); the price is the same',
    ),
  output_quality: z
    .number()
    .int('must be an integer')
    .min(1)
    .max(100)
    .optional()
    .describe('the compression quality of a jpeg or webp output, 1 (smallest) to 100 (best); only with output_format jpeg or webp. Absent: 90'),
} as const;

/** The record fields: what the create asked, absent when it asked nothing. */
export const outputFormatRecordFields = {
  output_format: z.enum(imageOutputFormats).optional().describe('the image format the create asked for; absent: png, the default'),
  output_quality: z.number().int().optional().describe('the compression quality the create asked for; absent when it asked none'),
} as const;

/** The quality a lossy format is encoded at when the create asks none. */
export const DEFAULT_OUTPUT_QUALITY = 90;

/** Why a create's `output_quality` does not go with its format (quality is for jpeg and webp), or undefined. */
export function outputQualityRefusal(b: { output_format?: ImageOutputFormat | undefined; output_quality?: number | undefined }): string | undefined {
  if (b.output_quality !== undefined && (b.output_format ?? 'png') === 'png') return 'png is lossless; ask output_format jpeg or webp to set a quality';
  return undefined;
}

/** For the document: output_quality only beside output_format jpeg or webp (merged into the image create schema's meta). */
export const outputQualityRule = {
  output_quality: { required: ['output_format'], properties: { output_format: { enum: ['jpeg', 'webp'] } } },
};

/** The format fields as params store them and records show them: a png asked is the default, so it is not stored (equal requests stay equal). */
export function outputFormatOf(p: { output_format?: ImageOutputFormat | null | undefined; output_quality?: number | null | undefined }): {
  output_format?: Exclude<ImageOutputFormat, 'png'>;
  output_quality?: number;
} {
  return {
    ...(p.output_format != null && p.output_format !== 'png' ? { output_format: p.output_format } : {}),
    ...(p.output_quality != null ? { output_quality: p.output_quality } : {}),
  };
}

/** What an image job's outputs are stored as: its asked format, and the quality it asked (PNG, no quality, by default). */
export interface ImageTarget {
  format: ImageOutputFormat;
  quality?: number;
}

/**
 * The target of an image job's outputs. Without a quality asked, an answer already in the format is
 * kept as the provider encoded it, and another is encoded at DEFAULT_OUTPUT_QUALITY.
 */
export function imageTargetOf(p: { output_format?: ImageOutputFormat | null | undefined; output_quality?: number | null | undefined }): ImageTarget {
  const format = p.output_format ?? 'png';
  return format === 'png' || p.output_quality == null ? { format } : { format, quality: p.output_quality };
}
