// The one list of live providers. A provider is its folder, providers/<name>/, with the same files
// as every other: descriptor.ts (pure data: keys, described config, output hosts, cancel, routes,
// longest call), adapter.ts (worker code, found by the provider's name: activities/providers/registry.ts),
// contract.ts (its request bodies), errors.ts (its error table) and, when it has one, probe.ts; and
// its import and name here. Everything below derives from the list: provider names
// (shared/job-model.ts), key variables and role secrets (shared/routing.ts), the cancel policy, the
// provider part of the configuration schema (./config.ts), the output hosts, the fleets' shutdown
// grace (activities/providers/call-timeouts.ts) and the catalog's alternates (shared/catalog.ts).
import type { OutputHosts, ProviderCancel, ProviderRoute } from './define.js';
import { fal } from './fal/descriptor.js';
import { openai } from './openai/descriptor.js';
import { xai } from './xai/descriptor.js';
import { elevenlabs } from './elevenlabs/descriptor.js';
import { google } from './google/descriptor.js';
import { byteplus } from './byteplus/descriptor.js';
import { alibaba } from './alibaba/descriptor.js';
import { azure } from './azure/descriptor.js';

export const providers = [fal, openai, xai, elevenlabs, google, byteplus, alibaba, azure] as const;

export type { AlternateAccepts, OutputFormat, OutputHosts, ProviderCancel, ProviderDescriptor, ProviderRoute, RouteOutput } from './define.js';

export type Descriptor = (typeof providers)[number];
export type LiveProviderName = Descriptor['name'];
export const liveProviderNames = providers.map((p) => p.name) as readonly LiveProviderName[] as readonly [LiveProviderName, ...LiveProviderName[]];

/** The configuration variables that hold provider keys. */
export type ProviderKey = Descriptor['keys'][number];

type ByName<T> = { [P in Descriptor as P['name']]: T extends 'keys' ? P['keys'] : never };
const byName = <T>(value: (p: Descriptor) => T) => Object.fromEntries(providers.map((p) => [p.name, value(p)])) as Record<LiveProviderName, T>;

/** The keys each live provider needs: all set (here or on its fleet) makes its routes live. */
export const providerKeys = byName((p) => p.keys) as ByName<'keys'>;

/** Whether each live provider honors a cancel of a submitted request (the descriptors' `cancel`). */
export const providerCancel: Readonly<Record<LiveProviderName, ProviderCancel>> = byName((p) => p.cancel);

/** Where each live provider's output files may come from, and which of those hosts may receive its key. */
export const providerOutputHosts: Readonly<Record<LiveProviderName, OutputHosts>> = byName((p) => p.outputHosts);

type PublicKey = NonNullable<Extract<Descriptor, { publicKeys: unknown }>['publicKeys']>[number];
/** The provider key variables that are secrets (an endpoint is not), in list order without repeats. */
export const providerSecrets = [
  ...new Set(providers.flatMap((p) => p.keys.filter((k) => !((p as { publicKeys?: readonly string[] }).publicKeys ?? []).includes(k)))),
] as Exclude<ProviderKey, PublicKey>[];

type DeclaredRoute = ProviderRoute & { provider: LiveProviderName };

function declaredRoutesOf(model: string): DeclaredRoute[] {
  return providers.flatMap((p) => {
    const route = (p as { routes?: Readonly<Record<string, ProviderRoute>> }).routes?.[model];
    return route ? [{ provider: p.name, ...route }] : [];
  });
}

/** The further routes of each catalog model that are offered, in list order: the catalog's `alternates`. */
export function providerRoutesOf(model: string): DeclaredRoute[] {
  return declaredRoutesOf(model).filter((r) => r.disabled === undefined);
}

/** The further routes of a model that are declared but not offered, each with why (the catalog's `disabledRoutes`). */
export function disabledRoutesOf(model: string): { provider: LiveProviderName; providerModelId: string; reason: string }[] {
  return declaredRoutesOf(model).flatMap((r) =>
    r.disabled === undefined ? [] : [{ provider: r.provider, providerModelId: r.providerModelId, reason: r.disabled }],
  );
}
