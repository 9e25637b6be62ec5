// The builds that were ever their Worker Deployment's Current Version (0050_deployment_builds): the
// promotion memory the Temporal server does not keep across a version's deletion.
import { sql } from 'kysely';
import type { Queryable } from '../index.js';

/** Records that `buildId` is (or was seen as) the deployment's Current Version; idempotent. */
export async function recordCurrentBuild(db: Queryable, deploymentName: string, buildId: string): Promise<void> {
  await db
    .insertInto('deployment_builds')
    .values({ deployment_name: deploymentName, build_id: buildId })
    .onConflict((oc) => oc.columns(['deployment_name', 'build_id']).doUpdateSet({ last_seen_current_at: sql<Date>`now()` }))
    .execute();
}

/** Every build of the deployment that was ever current. */
export async function everCurrentBuilds(db: Queryable, deploymentName: string): Promise<Set<string>> {
  const rows = await db.selectFrom('deployment_builds').select('build_id').where('deployment_name', '=', deploymentName).execute();
  return new Set(rows.map((r) => r.build_id));
}
