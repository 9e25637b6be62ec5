// The route health probe's table (0020_route_probes, 0055_route_lifecycle): what the probe found of each
// route, and what the provider announced of its model's end (worker/route-prober.ts).
import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

/** The route health probe's finding per provider and public model (0020_route_probes). */
export interface RouteProbeTable {
  provider: string;
  model: string;
  provider_model_id: string;
  status: Generated<RouteProbeStatus>;
  /** Why the route is unavailable (the provider's answer, in words); null while available. */
  reason: string | null;
  /** The last probe that could not tell (a 5xx, a timeout): it changes nothing. */
  last_error: string | null;
  checked_at: Timestamp | null;
  changed_at: Timestamp | null;
  next_probe_at: Generated<Date>;
  /** The day the probe first read the provider's deprecation or shutdown of the model (0055_route_lifecycle); null while none. */
  deprecated_at: string | null;
  /** The shutdown date the provider announced (OpenAI's shutdown_date); null when none is announced. Both dates are read as YYYY-MM-DD text (repos/route-probes.ts). */
  shutdown_at: string | null;
  /** What the provider said, in words (the endpoint and field read). */
  lifecycle_signal: string | null;
  /** When the operators were alerted of the current announcement. */
  lifecycle_alerted_at: Timestamp | null;
}
export type RouteProbeStatus = 'available' | 'unavailable';
