// Request validation with zod: the first problems are reported naming the field and, for enums,
// the allowed values.
import { z } from 'zod';
import { ApiError } from './errors.js';

export function formatIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => {
      const field = i.path.length ? i.path.join('.') : 'body';
      return `${field}: ${i.message}`;
    })
    .join('; ');
}

export function parseOr400<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ApiError(400, 'invalid_request', formatIssues(result.error));
  return result.data;
}
