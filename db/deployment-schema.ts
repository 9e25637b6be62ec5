// The promotion memory's table (0050_deployment_builds), beside db/schema.ts.
import type { Generated } from 'kysely';

/** A build that was its Worker Deployment's Current Version at least once. */
interface DeploymentBuildTable {
  deployment_name: string;
  build_id: string;
  first_current_at: Generated<Date>;
  last_seen_current_at: Generated<Date>;
}

/** This file's tables, as the database interface (db/schema.ts `DB`) lists them. */
export interface DeploymentTables {
  deployment_builds: DeploymentBuildTable;
}
