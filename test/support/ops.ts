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
