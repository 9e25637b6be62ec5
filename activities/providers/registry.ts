// The provider registry: every live provider's name, the keys it needs (shared/routing.ts
// providerKeys, which routing reads too), the hosts its output files may come from (and its key may
// go to) and how its adapter is built from configuration. Adding a provider is one entry here, its
// keys there, and its catalog routes.
import type { Config } from '../../shared/config.js';
import type { LiveProviderName } from '../../shared/job-model.js';
import { providerKeys, type ProviderKey } from '../../shared/routing.js';
import type { ProviderAdapter } from './types.js';
import { createFalAdapter, falOutputHosts, type FalConfig } from './fal.js';
import { createOpenAIAdapter } from './openai.js';
import { createElevenLabsAdapter } from './elevenlabs.js';
import { createXaiAdapter, xaiOutputHosts } from './xai.js';
import { createGoogleAdapter, googleOutputHosts } from './google.js';
import { byteplusOutputHosts, createByteplusAdapter } from './byteplus.js';
import { alibabaOutputHosts, createAlibabaAdapter } from './alibaba.js';
import type { OutputHosts } from './hosts.js';
import { createAzureAdapter } from './azure.js';
import { mediaToolsFrom, type MediaToolsConfig } from './media-tools.js';

export type ProvidersConfig = Pick<
  Config,
  'PROVIDERS_MODE' | 'FAL_KEY' | 'FAL_QUEUE_URL' | 'OPENAI_API_KEY' | 'OPENAI_BASE_URL' | 'ELEVENLABS_API_KEY' | 'ELEVENLABS_BASE_URL' | 'XAI_API_KEY' | 'XAI_BASE_URL' | 'GEMINI_API_KEY' | 'GEMINI_BASE_URL'
  | 'ARK_API_KEY' | 'ARK_BASE_URL' | 'DASHSCOPE_API_KEY' | 'DASHSCOPE_BASE_URL'
  | 'AZURE_OPENAI_API_KEY' | 'AZURE_OPENAI_ENDPOINT'
> &
  Partial<MediaToolsConfig> &
  Partial<Pick<Config, 'FAL_CDN_REQUIRES_KEY' | 'ARK_SEEDREAM_MODEL' | 'ARK_SEEDANCE_MODEL' | 'AZURE_OPENAI_IMAGE_DEPLOYMENT' | 'AZURE_OPENAI_API_VERSION'>>;

export interface ProviderEntry {
  name: LiveProviderName;
  requiredKeys: readonly ProviderKey[];
  /** Where its output files may come from, and which of those hosts may receive its key. */
  outputs: OutputHosts;
  /** Builds the adapter; called only when every required key is set. */
  create(config: ProvidersConfig): ProviderAdapter;
}

const noOutputHosts: OutputHosts = { hosts: [], keyHosts: [] };

const falConfig = (config: ProvidersConfig): FalConfig => ({ key: config.FAL_KEY!, queueUrl: config.FAL_QUEUE_URL, cdnRequiresKey: config.FAL_CDN_REQUIRES_KEY ?? false, media: mediaToolsFrom(config) });

export const providerRegistry = {
  fal: { name: 'fal', requiredKeys: providerKeys.fal, outputs: falOutputHosts, create: (c) => createFalAdapter(falConfig(c)) },
  // OpenAI and Azure answer images as base64: no output host at all.
  openai: { name: 'openai', requiredKeys: providerKeys.openai, outputs: noOutputHosts, create: (c) => createOpenAIAdapter({ key: c.OPENAI_API_KEY!, baseUrl: c.OPENAI_BASE_URL }) },
  xai: { name: 'xai', requiredKeys: providerKeys.xai, outputs: xaiOutputHosts, create: (c) => createXaiAdapter({ key: c.XAI_API_KEY!, baseUrl: c.XAI_BASE_URL }) },
  google: { name: 'google', requiredKeys: providerKeys.google, outputs: googleOutputHosts, create: (c) => createGoogleAdapter({ key: c.GEMINI_API_KEY!, baseUrl: c.GEMINI_BASE_URL }) },
  byteplus: {
    name: 'byteplus',
    requiredKeys: providerKeys.byteplus,
    outputs: byteplusOutputHosts,
    create: (c) => createByteplusAdapter({ key: c.ARK_API_KEY!, baseUrl: c.ARK_BASE_URL, seedreamModel: c.ARK_SEEDREAM_MODEL, seedanceModel: c.ARK_SEEDANCE_MODEL }),
  },
  elevenlabs: {
    name: 'elevenlabs',
    requiredKeys: providerKeys.elevenlabs,
    // The talking-actor video is a fal lipsync output.
    outputs: falOutputHosts,
    create: (c) => createElevenLabsAdapter({ key: c.ELEVENLABS_API_KEY!, baseUrl: c.ELEVENLABS_BASE_URL, fal: falConfig(c) }),
  },
  alibaba: { name: 'alibaba', requiredKeys: providerKeys.alibaba, outputs: alibabaOutputHosts, create: (c) => createAlibabaAdapter({ key: c.DASHSCOPE_API_KEY!, baseUrl: c.DASHSCOPE_BASE_URL, media: mediaToolsFrom(c) }) },
  azure: {
    name: 'azure',
    requiredKeys: providerKeys.azure,
    outputs: noOutputHosts,
    create: (c) => createAzureAdapter({ key: c.AZURE_OPENAI_API_KEY!, endpoint: c.AZURE_OPENAI_ENDPOINT!, deployment: c.AZURE_OPENAI_IMAGE_DEPLOYMENT ?? 'gpt-image-1.5', apiVersion: c.AZURE_OPENAI_API_VERSION }),
  },
} as const satisfies Record<LiveProviderName, ProviderEntry>;

/** The adapter of a live provider; throws naming the missing variables (never a value) when its keys are not set. */
export function createProviderAdapter(name: LiveProviderName, config: ProvidersConfig): ProviderAdapter {
  const entry: ProviderEntry = providerRegistry[name];
  const missing = entry.requiredKeys.filter((k) => !config[k]);
  if (missing.length) throw new Error(`the ${name} provider is not configured here: ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not set`);
  return entry.create(config);
}
