// Alibaba Cloud Model Studio (DashScope; Wan 2.2 Animate Mix): replace-actor's second route
// (providers/alibaba/adapter.ts).
import { defineProvider } from '../define.js';

export const alibaba = defineProvider({
  name: 'alibaba',
  keys: ['DASHSCOPE_API_KEY'],
  config: ({ optionalString, url }) => ({
    DASHSCOPE_API_KEY: optionalString.describe("Alibaba Cloud Model Studio's (DashScope) API key: replace-actor's second route is live only with it."),
    DASHSCOPE_BASE_URL: url
      .default('https://dashscope-intl.aliyuncs.com')
      .describe("DashScope's API origin, the Singapore (international) endpoint by default; a trailing /api/v1 (the SDK's base) is dropped."),
  }),
  /**
   * DashScope answers a signed URL on its own result buckets on OSS, named by region (its examples:
   * dashscope-result-bj.oss-cn-beijing.aliyuncs.com, dashscope-result-sh.oss-cn-shanghai.aliyuncs.com,
   * dashscope-result-sh.oss-accelerate.aliyuncs.com). Other OSS buckets are anyone's, so only
   * dashscope-result-* buckets are allowed; no key goes there.
   */
  outputHosts: { hosts: ['dashscope-result-*.oss-*.aliyuncs.com'], keyHosts: [] },
  // POST …/tasks/{id}/cancel stops PENDING tasks.
  cancel: 'queued',
  routes: {
    'replace-actor': {
      providerModelId: 'wan2.2-animate-mix',
      source:
        'alibabacloud.com/help/en/model-studio/wan-animate-mix-api (read 2026-11-25): POST /api/v1/services/aigc/image2video/video-synthesis (X-DashScope-Async: enable, Bearer key) { model: wan2.2-animate-mix, input: { image_url, video_url }, parameters: { mode: wan-std } } → output.task_id; GET /api/v1/tasks/{task_id} until SUCCEEDED → output.results.video_url; dashscope SDK 2.0.2 for the task protocol and error codes',
      accepts: { resolutions: ['720p'], aspectRatios: ['1:1', '9:16', '16:9'] },
      // Alibaba's reference documents no output resolution or frame for wan-std (the result is an MP4 at
      // output.results.video_url): the output store probes the video and, when its frame is not the
      // asked one (720p at the asked aspect ratio, what fal delivers), scales and center-crops it to it.
      produces: {
        formats: ['mp4'],
        aspectRatios: [],
        scaledToFrame: true,
        source:
          'alibabacloud.com/help/en/model-studio/wan-animate-mix-api (output.results.video_url, an MP4; no resolution or aspect ratio documented for the output)',
      },
    },
  },
});
