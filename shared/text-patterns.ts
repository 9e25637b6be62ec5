// Patterns the OpenAPI document states for string fields whose zod checks have no JSON Schema form.
// A leaf module (no imports): the kinds' fields and the generation controls both read it.

/**
 * For the document: a string with a character String.prototype.trim() keeps (and no NUL), i.e. what
 * `.trim().min(1)` accepts. Spelled out rather than \S, which regex engines read differently.
 */
export const NOT_BLANK_PATTERN = '^[^\\u0000]*[^\\u0000\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff][^\\u0000]*$';
