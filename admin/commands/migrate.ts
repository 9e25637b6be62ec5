// `migrate` and `migrate down`: the schema, and the grants of the role the processes connect as.
import { grantAppRole } from '../../db/roles.js';
import { grantFleetRoles } from '../../db/fleet-roles.js';
import { migrateDownAll, migrateToLatest } from '../../db/migrate.js';
import { adminDbTimeouts, UsageError, type Command } from '../command.js';

export const migrateCommands: Record<string, Command> = {
  migrate: {
    usage: 'migrate [--app-role NAME] [--fleet-roles PREFIX]',
    summary:
      "apply every pending migration; with --app-role, then grant that role the DML the gateways and workers need (db/roles.ts); with --fleet-roles, grant each PREFIX_<fleet> role its own fleet's tables (db/fleet-roles.ts)",
    flags: {
      'app-role': { type: 'string', help: 'the role the gateways and workers connect as (DML only)' },
      'fleet-roles': { type: 'string', help: 'prefix of the per-fleet roles (PREFIX_gateway, PREFIX_workflows, …), created beforehand' },
    },
    async run(ctx, f) {
      const r = await migrateToLatest(ctx.db(), adminDbTimeouts(ctx.env).statementMs);
      const names = (r.results ?? []).map((m) => m.migrationName);
      const text = [names.length ? `applied ${names.join(', ')}` : 'already up to date'];
      const appRole = f['app-role'] as string | undefined;
      if (appRole !== undefined) {
        const granted = await grantAppRole(ctx.db(), appRole);
        text.push(`app role ${appRole}: DML on ${granted.tables.length} tables (administration tables read-only)`);
      }
      const fleetPrefix = f['fleet-roles'] as string | undefined;
      let fleetRoles: string[] | undefined;
      if (fleetPrefix !== undefined) {
        fleetRoles = (await grantFleetRoles(ctx.db(), fleetPrefix)).roles;
        text.push(`fleet roles: ${fleetRoles.join(', ')} (each its fleet's tables only)`);
      }
      return {
        json: { applied: names, ...(appRole !== undefined ? { app_role: appRole } : {}), ...(fleetRoles ? { fleet_roles: fleetRoles } : {}) },
        text,
      };
    },
  },
  'migrate down': {
    usage: 'migrate down',
    summary: 'revert every migration (drops all tables and their data); asks first unless --yes',
    flags: { yes: { type: 'boolean', help: 'do not ask for confirmation (scripts)' } },
    async run(ctx, flags) {
      const target = safeDatabaseName(ctx.env.DATABASE_URL);
      if (!flags.yes && !(await ctx.confirm(`This drops every table of database ${target} and all its data. Type "yes" to continue: `))) {
        throw new UsageError('migrate down not confirmed: answer "yes" at the prompt, or pass --yes');
      }
      const r = await migrateDownAll(ctx.db());
      const names = (r.results ?? []).map((m) => m.migrationName);
      return { json: { reverted: names }, text: [names.length ? `reverted ${names.join(', ')}` : 'nothing to revert'] };
    },
  },
};

/** The database name of a connection string (never its credentials), for the confirmation prompt. */
function safeDatabaseName(url: string | undefined): string {
  try {
    return url ? decodeURIComponent(new URL(url).pathname.slice(1)) || '(default)' : '(DATABASE_URL not set)';
  } catch {
    return '(unparsable DATABASE_URL)';
  }
}
