// Each endpoint is declared once: one `add` call gives its path, method, rate-limit class, body and
// query schemas (the handler receives them parsed and typed), its answers for the OpenAPI document,
// and its handler. A router mounts a table's endpoints; api/openapi.ts documents the same table.
import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { z } from 'zod';
import { confirmKey, keyScopeCheck, type Auth } from './auth.js';
import { jsonBody } from './body.js';
import type { Operation } from './operations.js';
import { parseOr400 } from './validate.js';

type Parsed<S> = S extends z.ZodType ? z.infer<S> : undefined;

/** What a handler receives: the request and response, the parsed body and query, and its router's services. */
interface EndpointContext<S, B, Q> {
  req: Request;
  res: Response;
  body: Parsed<B>;
  query: Parsed<Q>;
  services: S;
}

interface EndpointSpec<S, B extends z.ZodType | undefined, Q extends z.ZodType | undefined> extends Omit<Operation, 'body' | 'query'> {
  /** JSON body schema: the endpoint accepts application/json only, and the handler gets the parsed body. */
  body?: B;
  /** Query schema: the handler gets the parsed query. */
  query?: Q;
  /**
   * Middleware run after the rate limit and the JSON body parser, before validation and the handler:
   * wrappers that may answer in its place (Idempotency-Key replays, dry runs).
   */
  before?(services: S): RequestHandler[];
  /**
   * 'statement': the handler's own statement reads the API key's revocation (in the same snapshot as
   * its data), so the key listener's sync round trip is skipped; when that statement finds nothing
   * the handler runs confirmKey before answering. Default: confirmKey runs before the endpoint.
   */
  keyCheck?: 'statement';
  /** Runs before the body is validated (to tell one malformed field apart from the rest). */
  precheck?(req: Request): void;
  /** Validates the body with `body` in place of the default (for refusals worded the endpoint's own way); throws the 400. */
  parseBody?(raw: unknown): Parsed<B>;
  handler(ctx: EndpointContext<S, B, Q>): Promise<void> | void;
}

type AnyEndpoint<S> = EndpointSpec<S, z.ZodType | undefined, z.ZodType | undefined>;

/** A router's endpoints, each declared once; `S` is what its handlers need (deps, caches). */
export class Endpoints<S> {
  readonly #list: AnyEndpoint<S>[] = [];

  add<B extends z.ZodType | undefined = undefined, Q extends z.ZodType | undefined = undefined>(spec: EndpointSpec<S, B, Q>): this {
    this.#list.push(spec as unknown as AnyEndpoint<S>);
    return this;
  }

  /** The OpenAPI operations of these endpoints, in declaration order. */
  get operations(): Operation[] {
    return this.#list.map(({ handler: _h, precheck: _p, before: _b, parseBody: _pb, keyCheck: _k, ...op }) => op);
  }

  /** An Express router serving these endpoints: rate-limit class, JSON body, validation, handler. */
  router(services: S, auth?: Auth): Router {
    const router = Router();
    for (const e of this.#list) {
      const chain: RequestHandler[] = [];
      if (e.keyCheck !== 'statement') chain.push(confirmedKey);
      // The key's scope, from memory (cached with the key): before the rate limit, body and handler.
      if (e.scope) chain.push(keyScopeCheck(e.scope));
      if (e.rateClass) {
        if (!auth) throw new Error(`${e.method.toUpperCase()} ${e.path} has a rate-limit class but its router got no auth`);
        chain.push(auth.rateLimit(e.rateClass));
      }
      if (e.body) chain.push(jsonBody);
      const parse = e.query ? queryParser(e.query) : () => undefined;
      let query: (req: Request, res: Response) => unknown = parse;
      if (e.before) {
        // The query is checked first: a malformed one is a 400 whatever a middleware would answer
        // (a dry run's 410 for a retired model, an idempotent replay).
        if (e.query) {
          chain.push(parsedQuery(parse));
          query = (_req, res) => res.locals[PARSED_QUERY];
        }
        chain.push(...e.before(services));
      }
      router[e.method](e.path, ...chain, async (req: Request, res: Response) => {
        e.precheck?.(req);
        const body = e.parseBody ? e.parseBody(req.body) : e.body ? parseOr400(e.body, req.body) : undefined;
        await e.handler({ req, res, body, query: query(req, res), services });
      });
    }
    return router;
  }
}

/** A key the auth middleware answered from its cache, confirmed before anything else runs. */
const confirmedKey: RequestHandler = async (_req, res, next) => {
  try {
    await confirmKey(res);
  } catch (err) {
    return next(err);
  }
  next();
};

const PARSED_QUERY = 'parsedQuery';

function parsedQuery(parse: (req: Request) => unknown): RequestHandler {
  return (req, res, next) => {
    try {
      res.locals[PARSED_QUERY] = parse(req);
    } catch (err) {
      return next(err);
    }
    next();
  };
}

/** Most GETs carry no query string: then the schema's answer for an empty query is reused, unparsed. */
function queryParser(schema: z.ZodType): (req: Request) => unknown {
  const empty = schema.safeParse({});
  return (req) => (empty.success && !req.url.includes('?') ? empty.data : parseOr400(schema, req.query));
}
