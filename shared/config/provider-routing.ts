// Provider routing: live or local, failover between routes, the per-route circuit breaker, and the
// outputs fetched back from providers. The provider-specific variables are in ./providers.ts.
import { z } from 'zod';
import { bool, int, optionalString } from './env-types.js';

export const providerRoutingEnv = {
  PROVIDERS_MODE: z
    .enum(['local', 'live', 'auto'])
    .default('local')
    .describe(
      "`local`: every model from the local renderer (placeholder media); `live`: a route whose provider key is set calls its provider, one without is unavailable; `auto`: a route is live when its key is present, else the local renderer. With NODE_ENV=production, `local` and auto's fallback are refused unless ALLOW_PLACEHOLDER_PROVIDERS.",
    ),
  ALLOW_PLACEHOLDER_PROVIDERS: bool(false).describe(
    "Production refuses to serve (and charge for) placeholder media from the local renderer, by PROVIDERS_MODE=local or by auto's fallback, unless this says it is on purpose (a demo, the prod profile).",
  ),
  PROVIDER_KEYS_SET: optionalString
    .meta({ valueType: 'variable names, comma-separated' })
    .describe(
      "Names (never values) of the provider key variables set on this deployment's provider fleets: a process that routes jobs but calls no provider (a gateway) holds no key.",
    ),
  PROVIDER_FAILOVER: bool(true).describe(
    "A job whose provider fails in a way another provider can fix moves to the model's next live route; `false` keeps every job on its first route.",
  ),
  PROVIDER_ROUTES: optionalString
    .meta({ valueType: '`model=provider,provider` separated by `;`' })
    .describe("Overrides the catalog's route order per model (one provider listed: no failover for that model). Checked at start."),
  PROVIDER_FAILOVER_BUDGET_MS: int(300_000, 100, 3_600_000).describe(
    'A provider step gives its route up when the provider stayed unreachable (5xx, timeouts) for this long and a route remains; a request the provider last reported running is never given up (its deadline ends it).',
  ),
  // The breaker per provider and model is shared by the fleet through Postgres.
  PROVIDER_BREAKER_MIN_ATTEMPTS: int(5, 1).describe('The circuit opens only when at least this many attempts ended within the window…'),
  PROVIDER_BREAKER_FAILURE_PERCENT: int(50, 1, 100).describe('…and at least this percent of them failed over.'),
  PROVIDER_BREAKER_OPEN_MS: int(60_000, 100).describe('An open circuit makes new jobs skip the route this long, then one trial job goes through (half-open).'),
  PROVIDER_OUTPUT_HOSTS: optionalString
    .meta({ valueType: '`provider=pattern;…` or a comma-separated list' })
    .describe(
      "Provider outputs are fetched through the guarded fetcher from each provider's own hosts only; these are the operator's extra host patterns per provider (`google=a.example.com;byteplus=*.cdn.example.net`; a bare comma-separated list applies to every provider).",
    ),
  PROVIDER_OUTPUT_MAX_MB: int(1024, 1, 10_240).describe('The largest provider output fetched, in MB.'),
};
