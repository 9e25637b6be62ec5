// `workspace set-share`: a workspace's fair share of the task queues, as a plan tier or a weight
// (shared/fair-share.ts). The jobs it creates from then on carry it.
import { setFairShareWeight } from '../../db/repos/fair-share.js';
import { fairShareTiers, isFairShareTier, parseFairShareWeight, tierOfWeight } from '../../shared/fair-share.js';
import { UsageError, ws, type Command } from '../command.js';

const tierList = Object.entries(fairShareTiers)
  .map(([k, v]) => `${k} (${v})`)
  .join(', ');

/** A weight for display: its tier's name beside it when it is one. */
export function describeShare(weight: number): string {
  const tier = tierOfWeight(weight);
  return tier ? `${weight} (${tier})` : String(weight);
}

export const fairShareCommands: Record<string, Command> = {
  'workspace set-share': {
    usage: 'workspace set-share --workspace W (--tier bulk|standard|priority | --weight X)',
    summary: `set the workspace's fair share of the provider queues for its new jobs: a tier, ${tierList}, or a weight from 0.001 to 1000`,
    flags: {
      workspace: ws,
      tier: { type: 'string', help: `plan tier: ${tierList}` },
      weight: { type: 'string', help: 'weight, 0.001 to 1000 (1 is the standard share)' },
    },
    async run(ctx, f) {
      const tier = f.tier as string | undefined;
      const weightText = f.weight as string | undefined;
      if ((tier === undefined) === (weightText === undefined)) throw new UsageError('give one of --tier or --weight');
      let weight: number;
      if (tier !== undefined) {
        if (!isFairShareTier(tier)) throw new UsageError(`--tier must be one of ${tierList}, got "${tier}"`);
        weight = fairShareTiers[tier];
      } else {
        const parsed = parseFairShareWeight(weightText!);
        if ('error' in parsed) throw new UsageError(`--weight: ${parsed.error}`);
        weight = parsed.weight;
      }
      const r = await ctx
        .db()
        .transaction()
        .execute((tx) => setFairShareWeight(tx, f.workspace as string, weight));
      return {
        json: { workspace_id: f.workspace, fair_share_weight: r.weight, tier: tierOfWeight(r.weight) ?? null, previous_weight: r.previous },
        text: [
          `workspace ${f.workspace as string} now has fair share ${describeShare(r.weight)} (was ${describeShare(r.previous)}); jobs created from now on carry it`,
        ],
      };
    },
  },
};
