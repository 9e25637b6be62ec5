// The operators' dashboard and alerting rules as code (ops/): their PromQL expressions, parsed with
// Prometheus' own grammar (@prometheus-io/lezer-promql, the parser of Prometheus' web UI), and the
// metric names they read.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { parser } from '@prometheus-io/lezer-promql';

const root = fileURLToPath(new URL('../../../', import.meta.url));
export const alertRulesPath = `${root}ops/prometheus/alerts.yml`;
export const dashboardPath = `${root}ops/grafana/mediagen.json`;

export interface NamedExpr {
  where: string;
  expr: string;
}

export function alertRules(): any {
  return parseYaml(readFileSync(alertRulesPath, 'utf8'));
}

export function dashboard(): any {
  return JSON.parse(readFileSync(dashboardPath, 'utf8'));
}

/** Every PromQL expression of the rules and the dashboard, named by where it is. */
export function allExpressions(): NamedExpr[] {
  const rules = (alertRules().groups as any[]).flatMap((g) => (g.rules as any[]).map((r) => ({ where: `rule ${r.alert ?? r.record}`, expr: String(r.expr) })));
  const panels = (dashboard().panels as any[]).flatMap((p) => ((p.targets ?? []) as any[]).map((t) => ({ where: `panel "${p.title}"`, expr: String(t.expr) })));
  return [...rules, ...panels];
}

/** The syntax errors of a PromQL expression (empty when it parses), as `offset: text`. */
export function promqlErrors(expr: string): string[] {
  const errors: string[] = [];
  parser.parse(expr).iterate({
    enter(node) {
      if (node.type.isError) errors.push(`${node.from}: ${JSON.stringify(expr.slice(Math.max(0, node.from - 10), node.to + 10))}`);
    },
  });
  return errors;
}

/** The metric names an expression selects (VectorSelector identifiers). */
export function metricNames(expr: string): string[] {
  const names = new Set<string>();
  parser.parse(expr).iterate({
    enter(node) {
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector') names.add(expr.slice(node.from, node.to));
    },
  });
  return [...names];
}

/**
 * The series names a Prometheus text exposition offers: its samples' names, and for every declared
 * histogram or summary its `_bucket` / `_count` / `_sum` series even before a first observation.
 */
export function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) {
      names.add(type[1]!);
      if (type[2] === 'histogram' || type[2] === 'summary') for (const s of ['_bucket', '_count', '_sum']) names.add(`${type[1]}${s}`);
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/.exec(line);
    if (sample) names.add(sample[1]!);
  }
  return names;
}

/** One sample of a Prometheus text exposition: its labels and value. */
export interface Sample {
  labels: Record<string, string>;
  value: number;
}

/** The samples of `name` in a Prometheus text exposition. */
export function samplesOf(text: string, name: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

type SyntaxNode = ReturnType<ReturnType<typeof parser.parse>['topNode']['getChild']> & object;

/**
 * Evaluates an alert rule's expression at one instant against one scrape (the rule's `for` aside):
 * the series an alert would fire for, with their labels and value. The subset alert rules of the
 * form `agg by (labels) (metric{matchers}) <cmp> number` use: vector selectors with = and !=
 * matchers, sum / max / min / count with `by`, parentheses, a comparison with a number, and
 * `and` / `unless` matched `on (labels)`.
 * Anything else throws, so a rule this cannot evaluate is never reported as quiet.
 */
export function evaluateAlert(expr: string, exposition: string): Sample[] {
  const tree = parser.parse(expr);
  const src = (n: SyntaxNode) => expr.slice(n.from, n.to);
  const kids = (n: SyntaxNode) => {
    const out: SyntaxNode[] = [];
    for (let c = n.firstChild; c; c = c.nextSibling) out.push(c);
    return out;
  };
  const evalNode = (n: SyntaxNode): Sample[] | number => {
    switch (n.name) {
      case 'PromQL':
      case 'ParenExpr':
      case 'FunctionCallBody':
        return evalNode(kids(n).find((c) => c.name !== '(' && c.name !== ')')!);
      case 'NumberDurationLiteral':
      case 'NumberLiteral':
        return Number(src(n));
      case 'VectorSelector': {
        const name = src(n.getChild('Identifier')!);
        const matchers = (n.getChild('LabelMatchers') ? kids(n.getChild('LabelMatchers')!) : []).map((m) => ({
          label: src(m.getChild('LabelName')!),
          op: src(m.getChild('MatchOp')!),
          value: JSON.parse(src(m.getChild('StringLiteral')!)) as string,
        }));
        for (const m of matchers) if (m.op !== '=' && m.op !== '!=') throw new Error(`evaluateAlert: matcher ${m.op} is not supported`);
        return samplesOf(exposition, name).filter((s) => matchers.every((m) => ((s.labels[m.label] ?? '') === m.value) === (m.op === '=')));
      }
      case 'AggregateExpr': {
        const op = src(n.getChild('AggregateOp')!);
        const modifier = n.getChild('AggregateModifier');
        if (modifier && !modifier.getChild('By')) throw new Error('evaluateAlert: only `by` grouping is supported');
        const by = modifier
          ? kids(modifier.getChild('GroupingLabels')!)
              .filter((c) => c.name === 'LabelName')
              .map(src)
          : [];
        const input = evalNode(n.getChild('FunctionCallBody')!);
        if (typeof input === 'number') throw new Error('evaluateAlert: aggregation of a number');
        const groups = new Map<string, { labels: Record<string, string>; values: number[] }>();
        for (const s of input) {
          const labels = Object.fromEntries(by.filter((l) => s.labels[l] !== undefined).map((l) => [l, s.labels[l]!]));
          const key = JSON.stringify(by.map((l) => labels[l] ?? ''));
          const g = groups.get(key) ?? { labels, values: [] };
          g.values.push(s.value);
          groups.set(key, g);
        }
        const fold: Record<string, (v: number[]) => number> = {
          sum: (v) => v.reduce((a, b) => a + b, 0),
          max: (v) => Math.max(...v),
          min: (v) => Math.min(...v),
          count: (v) => v.length,
        };
        if (!fold[op]) throw new Error(`evaluateAlert: aggregation ${op} is not supported`);
        return [...groups.values()].map((g) => ({ labels: g.labels, value: fold[op]!(g.values) }));
      }
      case 'BinaryExpr': {
        const parts = kids(n);
        const matching = parts.find((c) => c.name === 'MatchingModifierClause');
        const [l, opNode, r] = parts.filter((c) => c !== matching);
        if (opNode!.name === 'And' || opNode!.name === 'Unless') {
          // Set operations, matched `on` the listed labels (the only matching the rules use).
          if (!matching?.getChild('On')) throw new Error(`evaluateAlert: ${src(opNode!)} needs on (...)`);
          const on = kids(matching.getChild('GroupingLabels')!)
            .filter((c) => c.name === 'LabelName')
            .map(src);
          const [left, right] = [evalNode(l!), evalNode(r!)];
          if (typeof left === 'number' || typeof right === 'number') throw new Error(`evaluateAlert: ${src(n)} needs vectors on both sides`);
          const key = (x: Sample) => JSON.stringify(on.map((k) => x.labels[k] ?? ''));
          const keys = new Set(right.map(key));
          return left.filter((x) => keys.has(key(x)) === (opNode!.name === 'And'));
        }
        const compare: Record<string, (a: number, b: number) => boolean> = {
          Gtr: (a, b) => a > b,
          Lss: (a, b) => a < b,
          Gte: (a, b) => a >= b,
          Lte: (a, b) => a <= b,
          EqlSingle: (a, b) => a === b,
          Neq: (a, b) => a !== b,
        };
        const cmp = compare[opNode!.name];
        const left = evalNode(l!);
        const right = evalNode(r!);
        if (!cmp || typeof left === 'number' || typeof right !== 'number')
          throw new Error(`evaluateAlert: only "vector <comparison> number" is supported, not ${src(n)}`);
        return left.filter((s) => cmp(s.value, right));
      }
      default:
        throw new Error(`evaluateAlert: ${n.name} (${src(n)}) is not supported`);
    }
  };
  if (promqlErrors(expr).length) throw new Error(`evaluateAlert: ${expr} does not parse`);
  const result = evalNode(tree.topNode as SyntaxNode);
  if (typeof result === 'number') throw new Error('evaluateAlert: the expression is a number');
  return result;
}

/** The alert rule named `alert` of ops/prometheus/alerts.yml. */
export function alertRule(alert: string): { alert: string; expr: string; for: string } {
  const rule = (alertRules().groups as any[]).flatMap((g) => g.rules as any[]).find((r) => r.alert === alert);
  if (!rule) throw new Error(`no alert rule ${alert}`);
  return rule;
}
