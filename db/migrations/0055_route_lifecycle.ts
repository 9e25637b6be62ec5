// What the route health probe learns of a model's lifecycle from its provider (worker/route-prober.ts):
// the provider's announced shutdown date (OpenAI's `shutdown_date`) or its word that the model is
// deprecated (fal's model status), the day the probe first read it (the route's deprecated_at) and when
// the operators were alerted, so every replica shows the same deprecation and an alert fires once per
// announcement, never silently.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('route_probes')
    .addColumn('deprecated_at', 'date')
    .addColumn('shutdown_at', 'date')
    .addColumn('lifecycle_signal', 'text')
    .addColumn('lifecycle_alerted_at', 'timestamptz')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('route_probes')
    .dropColumn('lifecycle_alerted_at')
    .dropColumn('lifecycle_signal')
    .dropColumn('shutdown_at')
    .dropColumn('deprecated_at')
    .execute();
}
