// Opt-in live smoke test (never in CI, never in `npm test`): for each provider whose key is in the
// environment, runs the cheapest job this service can send it, through the real adapters and the real
// output path, and prints latency and cost. It spends real money (a few cents per provider).
//
//   FAL_KEY=… OPENAI_API_KEY=… ELEVENLABS_API_KEY=… XAI_API_KEY=… npm run smoke:live
//
// Storage is the one configured by S3_* (outputs land under jobs/smoke-<time>-<provider>/). Jobs that
// hand inputs to a provider by URL are skipped: they need a bucket the provider can reach, which a local
// MinIO is not. What runs:
//   fal          nano-banana-2, 1 image, 1:1, no inputs
//   OpenAI       gpt-image-2, 1 image, 1920×1920 (gpt-image-1.5 was shut down on 2026-12-01)
//   ElevenLabs   text-to-speech of one short sentence (the speech step of a talking actor)
//   xAI          grok-imagine-video, 1 s at 480p
// Cost is our catalog price in credits for that job, and the provider's list price the catalog `source`
// names where it is a fixed figure; the provider's invoice is the truth.
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../shared/config.js';
import { createStorage } from '../shared/storage.js';
import { routeFor, priceFor } from '../shared/catalog.js';
import { createFalAdapter } from '../activities/providers/fal.js';
import { createOpenAIAdapter } from '../activities/providers/openai.js';
import { createElevenLabsAdapter } from '../activities/providers/elevenlabs.js';
import { createXaiAdapter } from '../activities/providers/xai.js';
import { storeProviderOutput } from '../activities/providers/outputs.js';
import type { PollResult, ProviderAdapter, ProviderContext, ProviderRequest } from '../activities/providers/types.js';
import type { ProviderName } from '../workflows/definitions.js';

const config = loadConfig({ ...process.env, PROVIDERS_MODE: 'live' });
const storage = createStorage(config);
const stamp = new Date()
  .toISOString()
  .replace(/[-:.TZ]/g, '')
  .slice(0, 14);

const ctx: ProviderContext = {
  storage,
  inputUrl: (key) => storage.url(key, 3600),
  heartbeat: () => undefined,
  signal: new AbortController().signal,
  attempt: 1,
};

function request(model: string, provider: string, over: Partial<ProviderRequest> = {}): ProviderRequest {
  const route = routeFor(model)!;
  return {
    jobId: `smoke-${stamp}-${provider}`,
    kind: route.kind,
    model,
    route,
    prompt: 'A small red kite in a clear blue sky, simple and bright',
    aspectRatio: route.defaultAspectRatio,
    count: route.kind === 'image' ? 1 : undefined,
    inputs: [],
    ...over,
  };
}

async function pollUntilDone(adapter: ProviderAdapter, ref: Awaited<ReturnType<ProviderAdapter['submit']>>, deadlineMs: number): Promise<PollResult> {
  const end = Date.now() + deadlineMs;
  let wait = 2000;
  for (;;) {
    const r = await adapter.poll(ref, ctx);
    if (r.state === 'succeeded' || r.state === 'failed') return r;
    if (Date.now() > end) throw new Error(`not done after ${deadlineMs / 1000} s (last state ${r.state})`);
    await new Promise((res) => setTimeout(res, r.nextPollMs ?? wait));
    wait = Math.min(wait * 1.5, 10_000);
  }
}

async function storeOutputs(provider: ProviderName, adapter: ProviderAdapter, jobId: string, result: PollResult): Promise<string[]> {
  const out: string[] = [];
  for (const [index, output] of (result.outputs ?? []).entries()) {
    if (output.key) {
      out.push(`${output.key} (${output.size ?? '?'} bytes)`);
      continue;
    }
    const saved = await storeProviderOutput({ storage, config }, { provider, jobId, index, output, headers: adapter.outputHeaders?.(output) });
    out.push(`${saved.key} (${saved.contentType}, ${saved.size} bytes, from ${new URL(output.url!).host})`);
  }
  return out;
}

interface Smoke {
  provider: ProviderName;
  key: string | undefined;
  listPrice: string;
  run(): Promise<{ credits: number; detail: string[] }>;
}

const smokes: Smoke[] = [
  {
    provider: 'fal',
    key: config.FAL_KEY,
    listPrice: 'per fal.ai/models/fal-ai/nano-banana-2 (per image)',
    async run() {
      const adapter = createFalAdapter({ key: config.FAL_KEY!, queueUrl: config.FAL_QUEUE_URL, cdnRequiresKey: config.FAL_CDN_REQUIRES_KEY });
      const req = request('nano-banana-2', 'fal');
      const result = await pollUntilDone(adapter, await adapter.submit(req, ctx), 300_000);
      if (result.state === 'failed') throw new Error(result.message);
      return { credits: priceFor(req.route, { count: 1 }), detail: await storeOutputs('fal', adapter, req.jobId, result) };
    },
  },
  {
    provider: 'openai',
    key: config.OPENAI_API_KEY,
    listPrice: 'per OpenAI image token pricing for gpt-image-2 at 1920×1920 (default quality)',
    async run() {
      const adapter = createOpenAIAdapter({ key: config.OPENAI_API_KEY!, baseUrl: config.OPENAI_BASE_URL });
      const req = request('gpt-image-2', 'openai');
      const result = await adapter.poll(await adapter.submit(req, ctx), ctx);
      return { credits: priceFor(req.route, { count: 1 }), detail: await storeOutputs('openai', adapter, req.jobId, result) };
    },
  },
  {
    provider: 'elevenlabs',
    key: config.ELEVENLABS_API_KEY,
    listPrice: 'per ElevenLabs character pricing (about 60 characters)',
    async run() {
      const voiceId = process.env.SMOKE_ELEVENLABS_VOICE_ID ?? '21m00Tcm4TlvDq8ikWAM';
      const adapter = createElevenLabsAdapter({
        key: config.ELEVENLABS_API_KEY!,
        baseUrl: config.ELEVENLABS_BASE_URL,
        fal: { key: config.FAL_KEY ?? '', queueUrl: config.FAL_QUEUE_URL },
      });
      const script = 'Hello, this is a short smoke test of the speech step.';
      const req = request('talking-actor', 'elevenlabs', { script, voice: { id: 'smoke', ttsVoice: 'en-us', providerVoiceId: voiceId, gender: 'female' } });
      const speech = await adapter.synthesize(req, ctx);
      return { credits: 0, detail: [`${speech.key} (${speech.seconds.toFixed(2)} s of speech; speech alone is not a priced job)`] };
    },
  },
  {
    provider: 'xai',
    key: config.XAI_API_KEY,
    listPrice: 'per docs.x.ai video pricing (per second at 480p)',
    async run() {
      const adapter = createXaiAdapter({ key: config.XAI_API_KEY!, baseUrl: config.XAI_BASE_URL });
      const req = request('grok-video', 'xai', { duration: 1, resolution: '480p' });
      const result = await pollUntilDone(adapter, await adapter.submit(req, ctx), 600_000);
      if (result.state === 'failed') throw new Error(result.message);
      return { credits: priceFor(req.route, { duration: 1 }), detail: await storeOutputs('xai', adapter, req.jobId, result) };
    },
  },
];

let failed = 0;
for (const smoke of smokes) {
  if (!smoke.key) {
    console.log(`${smoke.provider.padEnd(11)} skipped (no key in the environment)`);
    continue;
  }
  const start = performance.now();
  try {
    const { credits, detail } = await smoke.run();
    const seconds = ((performance.now() - start) / 1000).toFixed(1);
    console.log(`${smoke.provider.padEnd(11)} ok in ${seconds} s; cost ${credits} credits here, provider list price ${smoke.listPrice}`);
    for (const d of detail) console.log(`${' '.repeat(12)}${d}`);
  } catch (err) {
    failed++;
    const seconds = ((performance.now() - start) / 1000).toFixed(1);
    console.log(`${smoke.provider.padEnd(11)} FAILED after ${seconds} s: ${(err as Error).message}`);
  }
}
process.exitCode = failed ? 1 : 0;
