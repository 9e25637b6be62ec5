// A create's `metadata` and `tags` (docs/api/metadata-and-tags.md): the customer's own labels on a
// job or a pipeline, stored as given, echoed in its records, webhooks and event streams, and usable
// as list filters and usage groups (chargeback per end customer). Bounds after Stripe's metadata: at
// most 50 keys of 1–40 characters (letters, digits, `_`, `-`, `.`) with string values of 1–500
// characters; at most 20 tags of 1–64 characters (a letter or digit, then letters, digits and
// `_ - . : /`), no duplicates. Pure zod, no I/O.
//
// Each label is also one row of an index table (job_labels / pipeline_labels, 0115_labels) keyed
// `t:<tag>` or `m:<key>=<value>`: a key never holds `=`, so the two never collide.
import { z } from 'zod';

export const METADATA_MAX_KEYS = 50;
const METADATA_KEY_MAX = 40;
export const METADATA_VALUE_MAX = 500;
export const TAGS_MAX = 20;
const TAG_MAX = 64;

export const METADATA_KEY_PATTERN = /^[A-Za-z0-9_.-]{1,40}$/;
export const TAG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}$/;

export type Metadata = Record<string, string>;

const metadataField = z
  .record(
    z.string().regex(METADATA_KEY_PATTERN, `keys are 1–${METADATA_KEY_MAX} characters of letters, digits, _ - .`),
    z
      .string()
      .min(1, 'values must not be empty')
      .max(METADATA_VALUE_MAX, `values are at most ${METADATA_VALUE_MAX} characters`)
      .refine((v) => !v.includes('\u0000'), 'values must not contain NUL'),
  )
  .refine((m) => Object.keys(m).length <= METADATA_MAX_KEYS, `at most ${METADATA_MAX_KEYS} keys`)
  .meta({ maxProperties: METADATA_MAX_KEYS, propertyNames: { pattern: METADATA_KEY_PATTERN.source } })
  .optional()
  .describe(
    `your own key-value pairs, echoed in records, webhooks and events and usable as list filters (?metadata[key]=value) and usage groups (group_by=metadata.<key>): ` +
      `at most ${METADATA_MAX_KEYS} keys of 1–${METADATA_KEY_MAX} characters (letters, digits, _ - .), string values of 1–${METADATA_VALUE_MAX} characters`,
  );

const tagsField = z
  .array(z.string().regex(TAG_PATTERN, `a tag is 1–${TAG_MAX} characters: a letter or digit, then letters, digits, _ - . : /`))
  .max(TAGS_MAX, `at most ${TAGS_MAX} tags`)
  .refine((t) => new Set(t).size === t.length, 'tags must not repeat')
  .meta({ uniqueItems: true })
  .optional()
  .describe(
    `your own labels, echoed in records, webhooks and events and usable as list filters (?tag=, repeatable: all of them) and usage groups (group_by=tag): ` +
      `at most ${TAGS_MAX} distinct tags of 1–${TAG_MAX} characters, a letter or digit then letters, digits, _ - . : /`,
  );

/** Every create body's label fields. */
export const labelRequestFields = { metadata: metadataField, tags: tagsField };

/** Every record's label fields: what the create gave ({} and [] when it gave none). */
export const labelRecordFields = {
  metadata: z.record(z.string(), z.string()).describe("the create's metadata ({} when none)"),
  tags: z.array(z.string()).describe("the create's tags ([] when none)"),
};

/** The index table's keys of a subject's labels. */
export function labelKeys(metadata: Metadata, tags: readonly string[]): string[] {
  return [...tags.map(tagLabel), ...Object.entries(metadata).map(([k, v]) => metadataLabel(k, v))];
}

export const tagLabel = (tag: string) => `t:${tag}`;
export const metadataLabel = (key: string, value: string) => `m:${key}=${value}`;

/**
 * A pipeline step's job's labels: the pipeline's, with the step's added (its metadata wins a shared
 * key). Answers the refusal's words when the union passes a bound.
 */
export function mergeLabels(
  pipeline: { metadata?: Metadata; tags?: readonly string[] },
  step: { metadata?: Metadata; tags?: readonly string[] },
): { metadata: Metadata; tags: string[] } | { error: string } {
  const metadata = { ...pipeline.metadata, ...step.metadata };
  const tags = [...new Set([...(pipeline.tags ?? []), ...(step.tags ?? [])])];
  if (Object.keys(metadata).length > METADATA_MAX_KEYS) return { error: `metadata: with the pipeline's, more than ${METADATA_MAX_KEYS} keys` };
  if (tags.length > TAGS_MAX) return { error: `tags: with the pipeline's, more than ${TAGS_MAX} tags` };
  return { metadata, tags };
}
