// The arithmetic of the capacity model v2 (npm run bench:capacity-cluster, docs/operations/capacity.md):
// per-job costs measured on the cluster profile and the capacity each resource has as deployed turn
// into the rate at which each resource saturates, the first bottleneck at a multiple of the
// measured rate, and the replica counts a Helm overlay needs at a target rate. Pure: no I/O, so the
// unit test (test/unit/capacity-model.test.ts) checks it without a cluster.

/** One resource a job consumes: `perJob` units per completed job, `capacity` units per second available. */
export interface Resource {
  name: string;
  unit: string;
  perJob: number;
  capacity: number;
  /** How the capacity was arrived at (printed next to the figure). */
  basis: string;
  /** Whether more replicas add capacity (a gateway, a worker fleet) or not (the Postgres primary, the machine). */
  scalesOut: boolean;
}

interface Saturation {
  resource: Resource;
  /** Jobs per second at which the resource is fully used (Infinity when a job does not use it). */
  saturatesAt: number;
}

interface AtMultiple {
  multiple: number;
  rate: number;
  /** Every resource's use at that rate (demand ÷ capacity), highest first. */
  uses: { resource: Resource; demand: number; use: number }[];
  /** The resource used most at that rate; saturated when its use is ≥ 1. */
  first: { resource: Resource; demand: number; use: number };
}

export function saturations(resources: readonly Resource[]): Saturation[] {
  return resources
    .map((resource) => ({ resource, saturatesAt: resource.perJob > 0 ? resource.capacity / resource.perJob : Infinity }))
    .sort((a, b) => a.saturatesAt - b.saturatesAt);
}

/** Each resource's use at `multiple` × `measuredRate` jobs/s; the first bottleneck is the one used most. */
export function atMultiple(resources: readonly Resource[], measuredRate: number, multiple: number): AtMultiple {
  if (!resources.length) throw new Error('no resources to model');
  const rate = measuredRate * multiple;
  const uses = resources
    .map((resource) => {
      const demand = rate * resource.perJob;
      return { resource, demand, use: resource.capacity > 0 ? demand / resource.capacity : demand > 0 ? Infinity : 0 };
    })
    .sort((a, b) => b.use - a.use);
  return { multiple, rate, uses, first: uses[0]! };
}

/** Sizing of a scale-out component: how many replicas of `coresPerReplica` carry `rate` jobs/s at `cpuMsPerJob`. */
interface ReplicaPlan {
  /** Cores the rate needs, at 100 % use. */
  cores: number;
  /** Replicas to carry it at the target use, before the spare. */
  busy: number;
  /** Replicas with the spare (N+1, or +5 % above 20) and the floor: the autoscaler's ceiling. */
  max: number;
  /** The autoscaler's floor: a quarter of the ceiling, at least `minFloor`. */
  min: number;
}

export function replicasFor(rate: number, cpuMsPerJob: number, opts: { coresPerReplica?: number; targetUse?: number; minFloor?: number } = {}): ReplicaPlan {
  const coresPerReplica = opts.coresPerReplica ?? 1;
  const targetUse = opts.targetUse ?? 0.6;
  const minFloor = opts.minFloor ?? 2;
  if (!(coresPerReplica > 0) || !(targetUse > 0 && targetUse <= 1)) throw new Error('coresPerReplica > 0 and 0 < targetUse ≤ 1');
  const cores = (rate * cpuMsPerJob) / 1000;
  // The epsilon keeps a load exactly at the target from asking for one more replica.
  const busy = Math.max(0, Math.ceil(cores / (coresPerReplica * targetUse) - 1e-9));
  const spare = busy > 20 ? Math.ceil(busy * 0.05) : 1;
  const max = Math.max(minFloor, busy + spare);
  return { cores, busy, max, min: Math.max(minFloor, Math.ceil(max / 4)) };
}

/** A figure at three significant digits (or fewer for small integers), for the printed tables. */
export function fig(n: number): string {
  if (!Number.isFinite(n)) return '∞';
  if (n === 0) return '0';
  const abs = Math.abs(n);
  if (abs >= 1000) return Math.round(n).toLocaleString('en-US');
  return Number(n.toPrecision(3)).toString();
}
