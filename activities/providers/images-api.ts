// OpenAI's Images API as its hosts serve it (OpenAI itself, Azure OpenAI): POST a JSON body
// { model, prompt, n, size, output_format } → { data: [{ b64_json }] } (GPT image models always answer
// base64). The call is synchronous, so submit does the work: it decodes each image straight into our
// store at jobs/<jobId>/output-<n>.png and the ref carries only the keys. The hosts differ only in the
// URL, the auth header, the model name and how an error answer reads; the adapters (openai.ts,
// azure.ts) say those, and this file does the rest once.
//
// Nothing here relies on an idempotency key (neither host documents one): every call is a paid
// generation. So the timeout follows the SDK's 600 s (a timeout retried is an image paid twice), and a
// retried submit first looks for the images an earlier attempt already stored.
import type { PollResult, ProviderAdapter, ProviderContext, ProviderOutput, ProviderRequest } from './types.js';
import { notConfirmed, ProviderError } from './types.js';
import { errorFromResponse, malformed, parseJson, providerFetch, readText, type HttpCallOptions } from './http.js';
import { jobOutputKey } from '../../shared/job-media.js';
import type { LiveProviderName } from '../../providers/index.js';
import { longestCallMs } from './call-timeouts.js';
import { gptImageAsk, type GptImageAsk } from './gpt-image-models.js';

interface ImagesApiHost<Name extends LiveProviderName> {
  name: Name;
  /** How messages name the provider ('OpenAI', 'Azure OpenAI'). */
  label: string;
  key: string;
  url: string;
  headers: Record<string, string>;
  /** The model whose row of gpt-image-models.ts applies (an Azure deployment serves the route's model under another name). */
  modelOf(req: ProviderRequest): string;
  /** The request body, checked against the host's contract where it is built; `ask` is the table's size and format. */
  body(req: ProviderRequest, count: number, ask: GptImageAsk): object;
  /** An HTTP error answer as the host means it; http.ts's mapping by default. */
  httpError?(res: Response, text: string, o: HttpCallOptions): ProviderError;
  /** Image generation can take minutes; default: the provider's descriptor's `longestCallMs`. */
  timeoutMs?: number | undefined;
}

interface ImagesApiRef<Name extends string> {
  provider: Name;
  jobId: string;
  outputs: { key: string; contentType: string; size: number }[];
}

export function createImagesApiAdapter<Name extends LiveProviderName>(host: ImagesApiHost<Name>): ProviderAdapter {
  const timeoutMs = host.timeoutMs ?? longestCallMs[host.name];
  const opts = (what: string, ctx: ProviderContext): HttpCallOptions => ({ provider: host.label, what, timeoutMs, signal: ctx.signal, secrets: [host.key] });
  const refOf = (jobId: string, outputs: ImagesApiRef<Name>['outputs']) => ({ ...({ provider: host.name, jobId, outputs } satisfies ImagesApiRef<Name>) });

  return {
    name: host.name,
    async submit(req: ProviderRequest, ctx: ProviderContext) {
      if (req.route.kind !== 'image') {
        throw new ProviderError(`${host.label} serves only image models here; ${req.model} is routed elsewhere`, { retryable: false });
      }
      const o = opts('image generation', ctx);
      const ask = gptImageAsk(host.modelOf(req), req.aspectRatio ?? req.route.defaultAspectRatio);
      // Nothing is sent for a model without its row: a guessed size would be paid for, then refused.
      if (!ask)
        throw new ProviderError(`${host.label}: no size table for ${host.modelOf(req)} (activities/providers/gpt-image-models.ts)`, {
          retryable: false,
          route: true,
        });
      const count = req.count ?? 1;
      const keys = Array.from({ length: count }, (_, i) => jobOutputKey(ctx.storage, req.jobId, i + 1, 'png'));
      // An earlier attempt that stored every image (then failed to report it) was already paid for.
      const stored = await Promise.all(keys.map((k) => ctx.storage.stat(k)));
      if (stored.every((st) => st && st.size > 0)) {
        return refOf(
          req.jobId,
          keys.map((key, i) => ({ key, contentType: 'image/png', size: stored[i]!.size })),
        );
      }
      // Keep the activity alive while the synchronous call runs.
      const beat = setInterval(() => ctx.heartbeat({ phase: `${host.name}-images` }), 10_000);
      let body: ImagesAnswer;
      try {
        const res = await providerFetch(
          host.url,
          { method: 'POST', headers: { ...host.headers, 'content-type': 'application/json' }, body: JSON.stringify(host.body(req, count, ask)) },
          o,
        );
        const text = await readText(res, o);
        if (!res.ok) throw (host.httpError ?? errorFromResponse)(res, text, o);
        body = parseJson<ImagesAnswer>(text, o);
      } finally {
        clearInterval(beat);
      }
      if (!Array.isArray(body.data) || body.data.length === 0) throw malformed(o, 'no images in "data"');
      answerMismatch(host.label, body, { size: ask.size, outputFormat: ask.outputFormat, model: req.providerModelId });
      const outputs: ImagesApiRef<Name>['outputs'] = [];
      for (const [i, item] of (body.data as { b64_json?: unknown }[]).entries()) {
        if (i >= keys.length) break;
        const b64 = item?.b64_json;
        if (typeof b64 !== 'string' || !b64) throw malformed(o, `image ${i + 1} has no b64_json`);
        const bytes = Buffer.from(b64, 'base64');
        if (!isPng(bytes)) throw malformed(o, `image ${i + 1} is not a PNG`);
        const key = keys[i]!;
        const put = await ctx.storage.putStream(key, bytes, 'image/png', bytes.length);
        outputs.push({ key, contentType: 'image/png', size: put.size });
      }
      return refOf(req.jobId, outputs);
    },

    async poll(ref): Promise<PollResult> {
      const outputs = (ref as unknown as Partial<ImagesApiRef<Name>>).outputs;
      if (!Array.isArray(outputs)) throw new ProviderError(`${host.label}: the stored provider ref is incomplete`, { retryable: false });
      return { state: 'succeeded', percent: 100, outputs: outputs.map((x): ProviderOutput => ({ key: x.key, contentType: x.contentType, size: x.size })) };
    },

    // Image generation completes inside submit; there is nothing left to stop.
    async cancel() {
      return notConfirmed;
    },
  };
}

/** The answer fields read: openai-node's ImagesResponse (data, size, output_format) and a `model` some hosts add; quality and background are echoed too and not held to anything (gpt-image-models.ts). */
interface ImagesAnswer {
  data?: unknown;
  size?: unknown;
  output_format?: unknown;
  model?: unknown;
}

/**
 * Refuses an answer that says it is not what was asked: another size or format (ImagesResponse's
 * `size` and `output_format`), or another model where the host names it. An Azure deployment serves
 * whatever model the operator deployed under its name, so this is our configuration's fault, not the
 * customer's: the job fails over to another route (an account error) and the message says what served it.
 */
function answerMismatch(label: string, body: ImagesAnswer, asked: { size: string; outputFormat: string; model?: string | undefined }): void {
  const wrong: string[] = [];
  if (typeof body.size === 'string' && body.size !== asked.size) wrong.push(`size ${body.size}, not ${asked.size}`);
  if (typeof body.output_format === 'string' && body.output_format !== asked.outputFormat)
    wrong.push(`format ${body.output_format}, not ${asked.outputFormat}`);
  // A dated snapshot (gpt-image-1.5-2025-12-16) is the same model.
  if (typeof body.model === 'string' && asked.model && body.model !== asked.model && !body.model.startsWith(`${asked.model}-`))
    wrong.push(`model ${body.model}, not ${asked.model}`);
  if (wrong.length)
    throw new ProviderError(`${label} answered ${wrong.join(', ')}: the deployment serves another model or setting`, { retryable: false, account: true });
}

function isPng(b: Buffer): boolean {
  return b.length > 8 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47;
}
