// `audit list`: a workspace's audit log, newest first, as GET /v1/audit-events answers it to an
// owner key (the same read, db/repos/audit.ts), for operators and for owners without an owner key.
import { getWorkspace } from '../../db/repos/workspaces.js';
import { listAuditEvents } from '../../db/repos/audit.js';
import { auditActions, type AuditAction } from '../../shared/audit.js';
import { iso, positiveInt, UsageError, ws, type Command } from '../command.js';

const MAX_LIMIT = 1_000;

export const auditCommands: Record<string, Command> = {
  'audit list': {
    usage: 'audit list --workspace W [--action A] [--limit N]',
    summary: `list a workspace's audit events, newest first (default 50, at most ${MAX_LIMIT})`,
    flags: {
      workspace: ws,
      action: { type: 'string', help: `only this action: ${auditActions.join(', ')}` },
      limit: { type: 'string', help: `how many, 1 to ${MAX_LIMIT} (default 50)` },
    },
    async run(ctx, f) {
      const action = f.action as string | undefined;
      if (action !== undefined && !(auditActions as readonly string[]).includes(action)) {
        throw new UsageError(`--action must be one of ${auditActions.join(', ')}, got "${action}"`);
      }
      const limit = f.limit === undefined ? 50 : positiveInt('limit', f.limit as string);
      if (limit > MAX_LIMIT) throw new UsageError(`--limit must be at most ${MAX_LIMIT}, got ${limit}`);
      const db = ctx.db();
      await getWorkspace(db, f.workspace as string);
      const page = await listAuditEvents(db, f.workspace as string, { limit, filters: { action: action as AuditAction | undefined } });
      const rows = page.rows.map((e) => ({
        id: e.id,
        created_at: iso(e.created_at),
        action: e.action,
        actor: e.actor,
        target_type: e.target_type,
        target_id: e.target_id,
        details: e.details,
      }));
      return {
        json: rows,
        text: rows.length
          ? rows.map((e) => `${e.created_at}  ${e.action.padEnd(26)} ${e.actor}  ${e.target_type ?? ''} ${e.target_id ?? ''}  ${JSON.stringify(e.details)}`)
          : ['no audit events'],
      };
    },
  },
};
