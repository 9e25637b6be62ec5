// Reuse of identical requests by default (docs/api/reuse.md): a workspace setting, off by default,
// that makes every create without `reuse` reuse; a create's own `reuse` still decides for it.
import { AdminError } from '../../db/repos/workspaces.js';
import { recordAuditEvent } from '../../db/repos/audit.js';
import { OPERATOR_ACTOR } from '../../shared/audit.js';
import { ws, type Command } from '../command.js';

export const reuseCommands: Record<string, Command> = {
  'workspace reuse-requests': {
    usage: 'workspace reuse-requests --workspace W [--off]',
    summary: "answer the workspace's identical creates from each other by default (--off: only those that ask, reuse: true)",
    flags: {
      workspace: ws,
      off: { type: 'boolean', help: 'stop reusing by default; jobs already created keep theirs' },
    },
    async run(ctx, f) {
      const on = f.off !== true;
      const workspaceId = f.workspace as string;
      const r = await ctx
        .db()
        .transaction()
        .execute(async (tx) => {
          const before = await tx.selectFrom('workspaces').select('reuse_requests').where('id', '=', workspaceId).forUpdate().executeTakeFirst();
          if (!before) throw new AdminError('not_found', `workspace ${workspaceId} not found`);
          await tx.updateTable('workspaces').set({ reuse_requests: on, updated_at: new Date() }).where('id', '=', workspaceId).execute();
          await recordAuditEvent(tx, {
            workspaceId,
            action: 'workspace.reuse_changed',
            actor: OPERATOR_ACTOR,
            targetType: 'workspace',
            targetId: workspaceId,
            details: { reuse_requests: on, previous: before.reuse_requests },
          });
          return { workspace_id: workspaceId, reuse_requests: on };
        });
      return { json: r, text: [`workspace ${workspaceId} ${on ? 'now reuses' : 'no longer reuses'} identical requests by default`] };
    },
  },
};
