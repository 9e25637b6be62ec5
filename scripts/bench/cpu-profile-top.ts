// Summarizes a V8 CPU profile (`node --cpu-prof`) in a terminal: the functions with the most self
// time, and the share of the samples spent under each of the given frames (inclusive time).
//   node dist/scripts/bench/cpu-profile-top.js <file.cpuprofile> [top=30] [frame-substring ...]
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg, ...frames] = process.argv.slice(2);
if (!file) {
  console.error('usage: cpu-profile-top <file.cpuprofile> [top] [frame-substring ...]');
  process.exit(2);
}
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n: ProfileNode) =>
  `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-3).join('/')}:${n.callFrame.lineNumber + 1}`;
const self = new Map<string, number>();
const under = new Map<string, number>(frames.map((f) => [f, 0]));
let total = 0;
p.samples.forEach((id, i) => {
  const dt = p.timeDeltas[i] ?? 0;
  total += dt;
  const n = byId.get(id)!;
  self.set(label(n), (self.get(label(n)) ?? 0) + dt);
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur)!);
    for (const f of frames) if (!seen.has(f) && l.includes(f)) seen.add(f);
  }
  for (const f of seen) under.set(f, under.get(f)! + dt);
});
console.log(`total ${(total / 1000).toFixed(0)} ms sampled`);
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg ?? 30))) {
  console.log(`${(v / 1000).toFixed(0).padStart(7)} ms  ${((100 * v) / total).toFixed(1).padStart(5)} %  ${k}`);
}
for (const [f, v] of under) console.log(`under "${f}": ${(v / 1000).toFixed(0)} ms, ${((100 * v) / total).toFixed(1)} %`);
