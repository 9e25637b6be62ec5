// Who may ask for `priority: high` (docs/api/priority.md): a workspace setting, off by default, since
// a high job goes before every normal job of its workspace in every queue.
import { setHighPriorityAllowed } from '../../db/repos/workspace-priority.js';
import { ws, type Command } from '../command.js';

export const priorityCommands: Record<string, Command> = {
  'workspace allow-high-priority': {
    usage: 'workspace allow-high-priority --workspace W [--off]',
    summary: "let the workspace's jobs ask for priority high (--off: refuse them again, 403 priority_not_allowed)",
    flags: {
      workspace: ws,
      off: { type: 'boolean', help: 'stop allowing it; jobs already created keep their priority' },
    },
    async run(ctx, f) {
      const allowed = f.off !== true;
      const r = await ctx
        .db()
        .transaction()
        .execute((tx) => setHighPriorityAllowed(tx, f.workspace as string, allowed));
      return {
        json: r,
        text: [`workspace ${r.workspace_id} ${allowed ? 'may now create' : 'may no longer create'} priority high jobs`],
      };
    },
  },
};
