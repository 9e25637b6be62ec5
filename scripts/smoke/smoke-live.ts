// Opt-in live smoke test (never in CI, never in `npm test`): for each provider whose keys are in the
// environment, runs the steps of the smoke plan (scripts/smoke/smoke-plan.ts, derived from the catalog) through
// the real adapters and the real output path, and prints latency and cost. It spends real money (cents
// to a few dollars per provider: every video step is the shortest, lowest-resolution job the model takes).
//
//   FAL_KEY=… OPENAI_API_KEY=… ELEVENLABS_API_KEY=… XAI_API_KEY=… ARK_API_KEY=… npm run smoke:live
//   npm run smoke:live -- --plan     (prints the plan, calls nothing)
//
// Storage is the one configured by S3_* (outputs land under jobs/smoke-<time>-<step>/). The plan: one
// job per live provider and kind (the cheapest live model there), the speech step of a talking actor on
// ElevenLabs, a cancel right after the submit on each provider that honors a queued cancel (it prints
// whether the provider confirmed it: a confirmed cancel is not billed, an unconfirmed one may be), and one
// fal image-to-video job whose first frame is a URL, the fal image step's public CDN output. Cost is our
// catalog price in credits for that job; the provider's invoice is the truth.
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../../shared/config.js';
import { createStorage } from '../../shared/storage.js';
import { routeFor, priceFor } from '../../shared/catalog.js';
import { providerKeys } from '../../providers/index.js';
import { createElevenLabsAdapter } from '../../providers/elevenlabs/adapter.js';
import { createProviderAdapter } from '../../activities/providers/registry.js';
import { storeProviderOutput } from '../../activities/providers/outputs.js';
import type { InputFile, PollResult, ProviderAdapter, ProviderContext, ProviderRequest } from '../../activities/providers/types.js';
import type { ProviderName } from '../../workflows/definitions.js';
import { smokePlan, type SmokeStep } from './smoke-plan.js';

const plan = smokePlan();
if (process.argv.includes('--plan')) {
  for (const step of plan) console.log(JSON.stringify(step));
  process.exit(0);
}

const config = loadConfig({ ...process.env, PROVIDERS_MODE: 'live' });
const storage = createStorage(config);
const stamp = new Date()
  .toISOString()
  .replace(/[-:.TZ]/g, '')
  .slice(0, 14);

// An input whose key is `url:<https URL>` is handed to the provider as that URL (the URL-input step).
const remote = 'url:';
const ctx: ProviderContext = {
  storage,
  inputUrl: (key) => (key.startsWith(remote) ? Promise.resolve(key.slice(remote.length)) : storage.url(key, 3600)),
  heartbeat: () => undefined,
  signal: new AbortController().signal,
  attempt: 1,
};

function request(step: SmokeStep, over: Partial<ProviderRequest> = {}): ProviderRequest {
  const route = routeFor(step.model)!;
  return {
    jobId: `smoke-${stamp}-${step.action}-${step.provider}-${step.kind}`,
    kind: route.kind,
    model: step.model,
    route,
    providerModelId: step.providerModelId,
    prompt: 'A small red kite in a clear blue sky, simple and bright',
    aspectRatio: route.defaultAspectRatio,
    count: step.count,
    duration: step.duration,
    resolution: step.resolution,
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

/** The first output URL of each provider's image run, for the URL-input step. */
const imageUrls = new Map<string, string>();

async function runStep(step: SmokeStep): Promise<{ credits: number; detail: string[] }> {
  const route = routeFor(step.model)!;
  const job = { count: step.count, duration: step.duration };
  if (step.action === 'speech') {
    const voiceId = process.env.SMOKE_ELEVENLABS_VOICE_ID ?? '21m00Tcm4TlvDq8ikWAM';
    const adapter = createElevenLabsAdapter({ key: config.ELEVENLABS_API_KEY!, baseUrl: config.ELEVENLABS_BASE_URL });
    const script = 'Hello, this is a short smoke test of the speech step.';
    const req = request(step, { script, voice: { id: 'smoke', ttsVoice: 'en-us', providerVoiceId: voiceId, gender: 'female' } });
    const speech = await adapter.speak(req, ctx);
    return { credits: 0, detail: [`${speech.key} (${speech.seconds.toFixed(2)} s of speech; speech alone is not a priced job)`] };
  }
  const adapter = createProviderAdapter(step.provider, config);
  let inputs: InputFile[] = [];
  if (step.action === 'url-input') {
    const url = imageUrls.get(step.provider);
    if (!url) throw new Error(`no ${step.provider} image output to use as the URL input (its image step failed or was skipped)`);
    inputs = [{ role: 'start_frame', key: `${remote}${url}`, contentType: 'image/png' }];
  }
  const req = request(step, { inputs });
  const ref = await adapter.submit(req, ctx);
  if (step.action === 'cancel-queued') {
    const { confirmed } = await adapter.cancel(ref, ctx);
    const after = await adapter.poll(ref, ctx);
    return {
      credits: confirmed ? 0 : priceFor(route, job),
      detail: [`cancel ${confirmed ? 'confirmed (not billed)' : 'not confirmed: the request may have run and be billed'}; then ${after.state}`],
    };
  }
  const result = await pollUntilDone(adapter, ref, route.deadlineSeconds * 1000);
  if (result.state === 'failed') throw new Error(result.message);
  const first = result.outputs?.[0]?.url;
  if (step.action === 'run' && step.kind === 'image' && first) imageUrls.set(step.provider, first);
  return { credits: priceFor(route, job), detail: await storeOutputs(step.provider, adapter, req.jobId, result) };
}

let failed = 0;
for (const step of plan) {
  const name = `${step.provider} ${step.action} ${step.kind} ${step.model}`;
  const missing = providerKeys[step.provider].filter((k) => !config[k]);
  if (missing.length) {
    console.log(`${name}: skipped (${missing.join(', ')} not in the environment)`);
    continue;
  }
  const start = performance.now();
  try {
    const { credits, detail } = await runStep(step);
    const seconds = ((performance.now() - start) / 1000).toFixed(1);
    console.log(`${name}: ok in ${seconds} s; ${credits} credits here (${step.providerModelId})`);
    for (const d of detail) console.log(`    ${d}`);
  } catch (err) {
    failed++;
    const seconds = ((performance.now() - start) / 1000).toFixed(1);
    console.log(`${name}: FAILED after ${seconds} s: ${(err as Error).message}`);
  }
}
process.exitCode = failed ? 1 : 0;
