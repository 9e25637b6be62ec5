// Before a create (and its dry run): a deprecated model's answer carries the Deprecation, Sunset and
// X-Mediagen-Warning headers; a retired model's create is refused with 410 model_retired naming the
// replacement. The rules are shared/model-lifecycle.ts's; docs/api/deprecations.md.
import type { RequestHandler } from 'express';
import { routeFor } from '../shared/catalog.js';
import { modelLifecycle } from '../shared/model-lifecycle.js';
import { ApiError } from './errors.js';

/** The response headers a create may carry, for the OpenAPI document (components.headers). */
export const deprecationHeaders = {
  Deprecation: {
    description:
      'RFC 9745: the requested model is deprecated, since this date (a structured-field Date, `@` and Unix seconds). The job is created as usual; move to the replacement GET /v1/models names',
    required: false,
    schema: { type: 'string', pattern: '^@-?[0-9]+$' },
  },
  Sunset: {
    description:
      'RFC 8594: from this date (an HTTP-date) creates of the requested model are refused with 410 model_retired. Sent once a retirement date is set',
    required: false,
    schema: { type: 'string' },
  },
  'X-Mediagen-Warning': {
    description: 'With Deprecation: why the model is deprecated and which model to use instead, in words (for logs)',
    required: false,
    schema: { type: 'string' },
  },
} as const;

/**
 * The middleware of a kind's create: `models` are the kind's public models (others are refused later as
 * invalid_model); `clock` is the gateway's (tests freeze it on either side of a retirement date).
 */
export function modelLifecycleCheck(models: readonly string[], clock: () => Date = () => new Date()): RequestHandler {
  return (req, res, next) => {
    const model = (req.body as { model?: unknown } | undefined)?.model;
    if (typeof model !== 'string' || !models.includes(model)) return next();
    const lifecycle = modelLifecycle(routeFor(model)!, clock());
    if (lifecycle.state === 'retired') return next(new ApiError(410, 'model_retired', lifecycle.message));
    if (lifecycle.state === 'deprecated') res.set(lifecycle.headers);
    next();
  };
}
