// The fake DashScope server's own request contract for Wan 2.2 Animate Mix, transcribed apart from the
// adapter's (providers/alibaba/contract.ts) so that the two cannot share a mistake.
//  - The envelope, from Alibaba's Python SDK dashscope 2.0.2 (PyPI wheel): api_entities/
//    api_request_data.py ApiRequestData.to_request_object builds { model, parameters, input } for
//    every HTTP call, and api_entities/http_request.py adds `X-DashScope-Async: enable` to an
//    asynchronous one. The SDK has no class of its own for this model (aigc/video_synthesis.py serves
//    the generic video-synthesis task), so the fields inside come from the API reference.
//  - Inside it, from Alibaba's API reference "Wan - video character swap"
//    (alibabacloud.com/help/en/model-studio/wan-animate-mix-api) and a reseller's copy of its parameter
//    table (docs.modellix.ai/alibaba/wan-2-2-animate-mix, read for this file): input.image_url and
//    input.video_url, both required HTTP/HTTPS URLs; parameters.mode, required, "wan-std" (standard) or
//    "wan-pro" (professional); model "wan2.2-animate-mix". No other field is documented for the model.
import { z } from 'zod';

const httpUrl = z.string().regex(/^https?:\/\/[^\s]+$/, 'an HTTP or HTTPS URL');

export const dashscopeFakeAnimateMixRequest = z.strictObject({
  model: z.literal('wan2.2-animate-mix'),
  input: z.strictObject({ image_url: httpUrl, video_url: httpUrl }),
  parameters: z.strictObject({ mode: z.enum(['wan-std', 'wan-pro']) }),
});
