// Reuse of identical requests by default (docs/api/reuse.md): a workspace setting, off by default,
// that makes every create without `reuse` reuse; a create's own `reuse` still decides for it.
import { setWorkspaceSetting } from '../../db/repos/workspace-priority.js';
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
      const r = await ctx
        .db()
        .transaction()
        .execute((tx) => setWorkspaceSetting(tx, f.workspace as string, 'reuse_requests', on));
      return { json: r, text: [`workspace ${r.workspace_id} ${on ? 'now reuses' : 'no longer reuses'} identical requests by default`] };
    },
  },
};
