// A workspace's fair share of every task queue its jobs wait in: its Temporal fairness weight
// (shared/task-priority.ts). Within a priority level the server dispatches each workspace's
// backlog in proportion to its weight, so a workspace of weight 3 gets about three tasks for every
// one of a workspace of weight 1 while both wait. Operators set it with the admin CLI
// (`workspace set-share`), as a plan tier or a weight.

/** The plan tiers and their weights; `standard` is the default share of every workspace. */
export const fairShareTiers = { bulk: 0.5, standard: 1, priority: 3 } as const;
type FairShareTier = keyof typeof fairShareTiers;

/** The weights the database accepts (workspaces.fair_share_weight's check, migration 0021). */
export const fairShareWeightRange = { min: 0.001, max: 1000 } as const;

export function isFairShareTier(s: string): s is FairShareTier {
  return Object.hasOwn(fairShareTiers, s);
}

/** A weight as typed by an operator, or why it is refused. */
export function parseFairShareWeight(text: string): { weight: number } | { error: string } {
  const t = text.trim();
  const n = /^\d+(\.\d+)?$|^\.\d+$/.test(t) ? Number(t) : NaN;
  const { min, max } = fairShareWeightRange;
  if (!Number.isFinite(n) || n < min || n > max) return { error: `a fair-share weight is a number from ${min} to ${max}, got "${text}"` };
  return { weight: n };
}

/** The tier a weight is exactly, if any (for display). */
export function tierOfWeight(weight: number): FairShareTier | undefined {
  return (Object.keys(fairShareTiers) as FairShareTier[]).find((k) => fairShareTiers[k] === weight);
}
