// Alibaba Cloud Model Studio (DashScope) video character swap, Wan 2.2 Animate Mix: the request and
// answers as Alibaba publishes them. Sources, read 2026-11-25:
//  - alibabacloud.com/help/en/model-studio/wan-animate-mix-api ("Wan - video character swap API
//    reference"; also its Chinese original help.aliyun.com/zh/model-studio/wan-animate-mix-api and the
//    Indonesian translation): model `wan2.2-animate-mix`, service modes `wan-std` (standard) and
//    `wan-pro` (professional), differing in quality and price; asynchronous only: POST
//    {base}/api/v1/services/aigc/image2video/video-synthesis (Singapore base
//    https://dashscope-intl.aliyuncs.com, Beijing https://dashscope.aliyuncs.com; separate keys per
//    region) → a task_id valid for 24 hours, then poll. The page's curl example sends the headers
//    `X-DashScope-Async: enable`, `Authorization: Bearer $DASHSCOPE_API_KEY`, `Content-Type:
//    application/json` and the body { model: "wan2.2-animate-mix", input: { image_url, video_url },
//    parameters: { mode: "wan-std" } }.
//  - "Wan — Retrieve character swap result" (docs.qwencloud.com, api-reference/video-generation/
//    wan-video-character-swap/query-result; Qwen Cloud's reference of the same DashScope endpoints, taken
//    as Alibaba's from its content, its ownership not verified): GET {base}/api/v1/tasks/{task_id} with the
//    Bearer key → { request_id, output: { task_id, task_status, submit_time, scheduled_time, end_time,
//    results: { video_url } }, usage: { video_duration, video_ratio } }; status flow PENDING → RUNNING →
//    SUCCEEDED | FAILED; video_url expires after 24 hours.
//  - Alibaba's own Python SDK, `dashscope` 2.0.2 (pip download --no-deps dashscope), read for the wire:
//    api_entities/http_request.py adds `X-DashScope-Async: enable` to asynchronous calls and
//    common/utils.py default_headers sends `Authorization: Bearer <key>`; api_request_factory.py builds
//    {base_http_api_url}/services/{task_group}/{task}/{function} (base_http_api_url ends in /api/v1);
//    client/base_api.py reads output.task_id from the submit answer, fetches GET {base}/tasks/{task_id},
//    cancels with POST {base}/tasks/{task_id}/cancel ("Cancel PENDING task"), and stops waiting on
//    SUCCEEDED, FAILED, CANCELED or UNKNOWN; common/constants.py TaskStatus lists PENDING, SUSPENDED,
//    RUNNING, SUCCEEDED, FAILED, CANCELED, UNKNOWN; v2/resources/_jobs.py: UNKNOWN is what the gateway
//    answers (HTTP 200) for a task that does not exist or is not visible to the key; a FAILED task
//    carries `code` and `message` (read from the answer, output fields lifted beside the envelope's);
//    v2/errors.py: error bodies are { request_id, code, message }, and the wire codes InvalidApiKey (401),
//    AccessDenied (403), InvalidParameter (400), DataInspectionFailed (content policy),
//    Throttling / Throttling.RateQuota / Throttling.AllocationQuota (429, rate limits), InternalError
//    (500), ServiceUnavailable (503), GatewayTimeout (504), Arrearage ("a refused request, not an
//    exhausted quota").
//  - help.aliyun.com/zh/model-studio/wan-animate-mix-api, "模型与价格" (Beijing): wan-std 0.6 and wan-pro
//    0.9 yuan per second; rate limits shared by the account: 5 task submissions per second and ONE task
//    in progress at a time (同时处理中任务数量 1); whether further tasks queue as PENDING or are
//    refused is not stated.
//  - alibabacloud.com/help/en/model-studio/developer-reference/error-code ("Status codes"): 400
//    InvalidParameter, 400 DataInspectionFailed ("Input or output data may contain inappropriate
//    content"), 400 InvalidURL, 400 Arrearage ("Access denied because of overdue payments").
//
// Where what could be read is silent, this says so instead of guessing:
//  - the input limits (motion video 2–30 s, MP4/AVI/MOV, 200–2048 px a side, ≤ 200 MB; image
//    200–4096 px, ≤ 5 MB, JPG/PNG/BMP/WEBP) were read only from a reseller's copy of the parameter
//    table (docs.modellix.ai/alibaba/wan-2-2-animate-mix), not from Alibaba's page itself; the route
//    stays inside them by construction (the adapter sends a conformed 720p motion video of the job's
//    3–30 s and a 720p PNG of the actor), so nothing depends on them;
//  - no output resolution parameter is documented for this model (only `mode`): the output follows the
//    motion video, which the adapter conforms to the job's 720p frame, as for fal;
//  - optional fields seen in examples of sibling models (`watermark`, `check_image`) are not sent;
//  - the answer of a cancel for a task that is no longer PENDING is not documented: the adapter treats
//    any 4xx there as "nothing left to stop";
//  - older video models answer `output.video_url` rather than `output.results.video_url` (the SDK's
//    VideoSynthesisOutput, Alibaba's wan2.x query examples); the adapter reads `results.video_url`
//    first and accepts the flat field too.
import { z } from 'zod';

export const alibabaAnimateMixModelIds = ['wan2.2-animate-mix'] as const;
/** Standard and professional service modes (alibabacloud.com wan-animate-mix-api). */
const alibabaAnimateMixModes = ['wan-std', 'wan-pro'] as const;
export type AlibabaAnimateMixMode = (typeof alibabaAnimateMixModes)[number];

/** POST {base}/api/v1/services/aigc/image2video/video-synthesis, with `X-DashScope-Async: enable`. */
export const alibabaAnimateMixRequest = z.strictObject({
  model: z.enum(alibabaAnimateMixModelIds),
  input: z.strictObject({
    image_url: z.url({ protocol: /^https?$/ }),
    video_url: z.url({ protocol: /^https?$/ }),
  }),
  parameters: z.strictObject({
    mode: z.enum(alibabaAnimateMixModes),
  }),
});

export type AlibabaAnimateMixRequest = z.input<typeof alibabaAnimateMixRequest>;

/** The request header without which DashScope refuses an HTTP call to a video synthesis service. */
export const dashscopeAsyncHeader = { 'X-DashScope-Async': 'enable' } as const;

/** Task states (dashscope common/constants.py TaskStatus). UNKNOWN: no such task for this key (or expired). */
type DashScopeTaskStatus = 'PENDING' | 'SUSPENDED' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELED' | 'UNKNOWN';

/** The answer of a submit and of GET {base}/api/v1/tasks/{task_id}. */
export interface DashScopeTaskAnswer {
  request_id?: string;
  output?: {
    task_id?: string;
    task_status?: DashScopeTaskStatus | string;
    submit_time?: string;
    scheduled_time?: string;
    end_time?: string;
    results?: { video_url?: string };
    /** The flat result field of other video models (see above). */
    video_url?: string;
    /** A FAILED task's error code and message. */
    code?: string;
    message?: string;
  };
  usage?: { video_duration?: number; video_ratio?: string };
  code?: string;
  message?: string;
}
