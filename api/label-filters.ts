// The list filters by label (docs/api/metadata-and-tags.md): `?tag=` (repeatable: jobs carrying all
// of them) and `?metadata[key]=value` (several: all of them), read from the raw query (Express's
// query parser keeps `metadata[key]` as a flat key) and checked as the create checks labels: 400
// invalid_request naming the parameter otherwise. Answers the label index keys, in the order given.
import { z } from 'zod';
import { invalidRequest } from './errors.js';
import { METADATA_KEY_PATTERN, METADATA_VALUE_MAX, TAG_PATTERN, TAGS_MAX, metadataLabel, tagLabel, METADATA_MAX_KEYS } from '../shared/labels.js';

const NOT_A_TAG = 'is not a tag (1–64 characters: a letter or digit, then letters, digits, _ - . : /)';
const tagValue = z.string().regex(TAG_PATTERN, NOT_A_TAG);

/** The list query's label parameters, for the document and the parsed query (the values are checked again by labelFilters). */
export const labelQueryFields = {
  tag: z
    .union([tagValue, z.array(tagValue).max(TAGS_MAX)])
    .optional()
    .describe(`only those carrying this tag; repeat it (at most ${TAGS_MAX}) for those carrying every one of them`),
  metadata: z
    .record(z.string().regex(METADATA_KEY_PATTERN), z.string().min(1).max(METADATA_VALUE_MAX))
    .optional()
    .describe('only those whose metadata has these values, as `metadata[key]=value` (several: all of them)'),
};

const METADATA_PARAM = /^metadata\[(.*)\]$/;

export function labelFilters(query: Record<string, unknown>): string[] {
  const labels: string[] = [];
  const tags = query.tag === undefined ? [] : Array.isArray(query.tag) ? query.tag : [query.tag];
  if (tags.length > TAGS_MAX) throw invalidRequest(`tag: at most ${TAGS_MAX} tags`);
  for (const t of tags) {
    if (typeof t !== 'string' || !TAG_PATTERN.test(t)) throw invalidRequest(`tag: ${JSON.stringify(t)} ${NOT_A_TAG}`);
    labels.push(tagLabel(t));
  }
  if (query.metadata !== undefined) throw invalidRequest('metadata: filter as metadata[key]=value');
  const pairs = Object.entries(query).filter(([name]) => METADATA_PARAM.test(name));
  if (pairs.length > METADATA_MAX_KEYS) throw invalidRequest(`metadata: at most ${METADATA_MAX_KEYS} keys`);
  for (const [name, value] of pairs) {
    const key = METADATA_PARAM.exec(name)![1]!;
    if (!METADATA_KEY_PATTERN.test(key)) throw invalidRequest(`${name}: a metadata key is 1–40 characters of letters, digits, _ - .`);
    if (typeof value !== 'string') throw invalidRequest(`${name}: give one value`);
    if (value.length === 0 || value.length > METADATA_VALUE_MAX) throw invalidRequest(`${name}: a metadata value is 1–${METADATA_VALUE_MAX} characters`);
    labels.push(metadataLabel(key, value));
  }
  return [...new Set(labels)];
}
