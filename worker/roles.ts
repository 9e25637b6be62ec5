// Worker roles: which task queues this process polls. `--roles workflows,io,webhooks,provider:fal` or
// WORKER_ROLES; no roles means all of them (development). The workflows role also runs the job
// pipeline's Postgres steps as local activities, so it needs the database (DATABASE_URL) too.
import { providerNames, type ProviderName } from '../workflows/definitions.js';
import { parsePerProvider as parseEach } from '../shared/per-provider.js';

export type Role =
  { kind: 'workflows' } | { kind: 'io' } | { kind: 'fetch' } | { kind: 'webhooks' } | { kind: 'reconciler' } | { kind: 'provider'; provider: ProviderName };

function allRoles(): Role[] {
  return [
    { kind: 'workflows' },
    { kind: 'io' },
    { kind: 'fetch' },
    { kind: 'webhooks' },
    { kind: 'reconciler' },
    ...providerNames.map((provider) => ({ kind: 'provider', provider }) as Role),
  ];
}

class RoleError extends Error {
  override name = 'RoleError';
}

export function parseRoles(spec: string | undefined): Role[] {
  if (!spec || !spec.trim() || spec.trim() === 'all') return allRoles();
  const roles: Role[] = [];
  for (const raw of spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (raw === 'workflows' || raw === 'io' || raw === 'fetch' || raw === 'webhooks' || raw === 'reconciler') roles.push({ kind: raw });
    else if (raw === 'providers') roles.push(...providerNames.map((provider) => ({ kind: 'provider', provider }) as Role));
    else if (raw.startsWith('provider:')) {
      const provider = raw.slice('provider:'.length);
      if (!(providerNames as readonly string[]).includes(provider)) {
        throw new RoleError(`unknown provider in role ${raw}; known: ${providerNames.join(', ')}`);
      }
      roles.push({ kind: 'provider', provider: provider as ProviderName });
    } else throw new RoleError(`unknown role ${raw}; use workflows, io, fetch, webhooks, reconciler, providers or provider:<${providerNames.join('|')}>`);
  }
  return roles;
}

export function roleName(r: Role): string {
  return r.kind === 'provider' ? `provider:${r.provider}` : r.kind;
}

/** Parses "fal=8,local=2" into a map; unknown names or bad numbers throw a RoleError. */
export function parsePerProvider(spec: string | undefined, what: string): Partial<Record<ProviderName, number>> {
  return parseEach(spec, what, (message) => new RoleError(message));
}
