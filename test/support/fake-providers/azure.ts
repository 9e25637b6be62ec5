// A local Azure OpenAI server speaking the protocol of providers/azure/contract.ts (Microsoft's REST reference for
// image generation on a deployment, and the openai SDK's AzureOpenAI client): POST
// /openai/deployments/{deployment}/images/generations?api-version=… with the `api-key` header and a body
// validated against the same strict schema the adapter is type-checked with → { created, data: [{ b64_json }] }.
// The v1 API's POST /openai/v1/images/generations (api-version optional: v1 | preview) takes the same
// body with `model` required, naming the deployment.
// Errors use Azure's { error: { code, message, … } }: a wrong key is 401; an unknown deployment 404
// DeploymentNotFound; a missing api-version 404; an invalid body 400; a prompt containing "forbidden" is
// refused by the content filter (400 contentFilter, as the how-to's troubleshooting shows) and one
// containing "jailbreak" by the prompt filter with inner_error ResponsibleAIPolicyViolation (the
// reference's dalleErrorResponse). Every accepted call is a new, paid generation.
import { azureImageGenerateParams } from '../../../providers/azure/contract.js';
import { FakeServer, json, tinyPng, type Answer, type RecordedRequest } from './server.js';
import { documentedMedia, shapedMedia, sizeOf } from './media.js';
import { imagesEcho } from './openai.js';

const imagesPath = /^\/openai\/deployments\/([^/]+)\/images\/generations$/;
const v1ImagesPath = '/openai/v1/images/generations';

export class FakeAzure extends FakeServer {
  readonly key: string;
  readonly deployment: string;
  generations = 0;

  constructor(key = 'azure-test-key-0123456789abcdef', deployment = 'gpt-image-1.5') {
    super(
      (method, path) => (method === 'POST' && (imagesPath.test(path) || path === v1ImagesPath) ? 'images' : undefined),
      (req) => this.answer(req),
    );
    this.key = key;
    this.deployment = deployment;
  }

  private async answer(req: RecordedRequest): Promise<Answer> {
    if (req.headers['api-key'] !== this.key) {
      return json(401, { error: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint.' } });
    }
    const v1 = req.path === v1ImagesPath;
    if (!v1 && !req.query.get('api-version')) return json(404, { error: { code: '404', message: 'Resource not found' } });
    const body = req.json as { model?: unknown } | undefined;
    if (v1 && typeof body?.model !== 'string')
      return json(400, { error: { code: 'invalid_value', message: 'model is required', param: 'model', type: 'invalid_request_error' } });
    const deployment = v1 ? (body!.model as string) : decodeURIComponent(imagesPath.exec(req.path)![1]!);
    if (deployment !== this.deployment) {
      return json(404, { error: { code: 'DeploymentNotFound', message: 'The API deployment for this resource does not exist.' } });
    }
    const parsed = azureImageGenerateParams.safeParse(req.json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      return json(400, { error: { code: 'invalid_value', message: issue.message, param: issue.path.join('.') || 'body', type: 'invalid_request_error' } });
    }
    const b = parsed.data;
    if (b.model !== undefined && b.model !== deployment)
      return json(400, { error: { code: 'invalid_value', message: `model ${b.model} is not this deployment`, param: 'model', type: 'invalid_request_error' } });
    if (/forbidden/i.test(b.prompt)) {
      return json(400, {
        created: Math.floor(Date.now() / 1000),
        error: { code: 'contentFilter', message: 'Your task failed as a result of our safety system.' },
      });
    }
    if (/jailbreak/i.test(b.prompt)) {
      return json(400, {
        error: {
          code: 'content_policy_violation',
          message: 'Your request was rejected as a result of our safety system.',
          param: null,
          type: null,
          inner_error: { code: 'ResponsibleAIPolicyViolation', content_filter_results: { jailbreak: { detected: true, filtered: true } } },
        },
      });
    }
    this.generations++;
    const n = b.n ?? 1;
    // Azure answers OpenAI's ImagesResponse: the generation's size, format, quality and background echoed.
    const echo = imagesEcho(b);
    const size = sizeOf(echo.size);
    const image = documentedMedia.on && size ? await shapedMedia({ format: echo.output_format === 'png' ? 'png' : 'jpeg', ...size }) : tinyPng;
    return json(200, {
      created: Math.floor(Date.now() / 1000),
      background: echo.background,
      data: Array.from({ length: n }, () => ({ b64_json: image.toString('base64') })),
      output_format: echo.output_format,
      quality: echo.quality,
      size: echo.size,
      usage: { input_tokens: 50, input_tokens_details: { image_tokens: 0, text_tokens: 50 }, output_tokens: 50, total_tokens: 100 },
    });
  }
}

export async function startFakeAzure(key?: string, deployment?: string): Promise<FakeAzure> {
  return new FakeAzure(key, deployment).start();
}
