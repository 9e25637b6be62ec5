// The local fal queue as a live route: its output files served from a loopback HTTPS "CDN" (real
// sample media by extension), and the variables that send fal's models there while every other
// provider key is unset.
import { startFakeFal, type FakeFal } from './fal.js';
import { makeSampleMedia, startHttpsTestServer, type HttpsTestServer } from '../https-server.js';

export interface LiveFal {
  fal: FakeFal;
  cdn: HttpsTestServer;
  /** Configuration overrides (testConfig) and worker process variables. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startLiveFal(): Promise<LiveFal> {
  const [fal, cdn, media] = await Promise.all([startFakeFal(), startHttpsTestServer(), makeSampleMedia()]);
  fal.filesBaseUrl = cdn.origin;
  cdn.fallback((req, res) => {
    const [type, body] = (req.url ?? '').split('?')[0]!.endsWith('.mp4') ? ['video/mp4', media['video/mp4']] : ['image/png', media['image/png']];
    res.writeHead(200, { 'content-type': type, 'content-length': String(body.length) }).end(body);
  });
  return {
    fal,
    cdn,
    env: {
      PROVIDERS_MODE: 'live',
      FAL_KEY: fal.key,
      FAL_QUEUE_URL: fal.url,
      FAL_API_URL: fal.url,
      OPENAI_API_KEY: '',
      ELEVENLABS_API_KEY: '',
      XAI_API_KEY: '',
      GEMINI_API_KEY: '',
      ARK_API_KEY: '',
      DASHSCOPE_API_KEY: '',
      AZURE_OPENAI_API_KEY: '',
      // Outputs come from the loopback CDN, trusted by the test only.
      FETCH_ALLOW_LOOPBACK_ORIGIN: cdn.origin,
      FETCH_EXTRA_CA_FILE: cdn.caFile,
      PROVIDER_OUTPUT_HOSTS: '127.0.0.1',
    },
    close: async () => {
      await Promise.all([fal.close(), cdn.close()]);
    },
  };
}
