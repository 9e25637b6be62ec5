// The alerting rules and the dashboard (ops/) are valid: the rule file has Prometheus' structure
// (groups of named rules, each with an expression, a `for` duration, a severity and a summary), and
// every expression of the rules and the dashboard parses with Prometheus' PromQL grammar. That every
// metric they read exists is checked on running processes (test/e2e/ops-metrics.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { alertRules, allExpressions, dashboard, metricNames, promqlErrors } from '../support/ops.js';

test('the alerting rules have the rule file structure Prometheus loads', () => {
  const doc = alertRules();
  const problems: string[] = [];
  const names = new Set<string>();
  for (const g of doc.groups ?? []) {
    if (typeof g.name !== 'string' || !Array.isArray(g.rules) || g.rules.length === 0) problems.push(`group ${g.name}: a name and rules`);
    for (const r of g.rules ?? []) {
      const known = new Set(['alert', 'expr', 'for', 'keep_firing_for', 'labels', 'annotations']);
      for (const k of Object.keys(r)) if (!known.has(k)) problems.push(`${r.alert}: unknown field ${k}`);
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(r.alert ?? '')) problems.push(`${r.alert}: alert name`);
      if (names.has(r.alert)) problems.push(`${r.alert}: duplicate`);
      names.add(r.alert);
      if (typeof r.expr !== 'string' || r.expr.trim() === '') problems.push(`${r.alert}: expr`);
      if (!/^(\d+(ms|s|m|h|d|w|y))+$/.test(String(r.for ?? ''))) problems.push(`${r.alert}: for must be a duration`);
      if (!['page', 'ticket'].includes(r.labels?.severity)) problems.push(`${r.alert}: labels.severity page or ticket`);
      if (typeof r.annotations?.summary !== 'string') problems.push(`${r.alert}: annotations.summary`);
    }
  }
  assert.deepEqual(problems, []);
  assert.ok(names.size >= 5);
});

test('the dashboard is a Grafana dashboard whose panels each query Prometheus', () => {
  const d = dashboard();
  assert.equal(typeof d.title, 'string');
  assert.equal(typeof d.uid, 'string');
  const ids = new Set<number>();
  for (const p of d.panels) {
    assert.ok(!ids.has(p.id), `panel id ${p.id} is unique`);
    ids.add(p.id);
    assert.ok(p.gridPos && p.type && p.title, `panel ${p.id}: gridPos, type and title`);
    assert.ok(p.targets.length > 0, `panel "${p.title}" has a query`);
  }
});

test('every expression parses as PromQL and reads at least one metric', () => {
  const exprs = allExpressions();
  assert.ok(exprs.length > 10);
  const bad = exprs.flatMap(({ where, expr }) => [
    ...promqlErrors(expr).map((e) => `${where}: ${e}`),
    ...(metricNames(expr).length === 0 ? [`${where}: reads no metric`] : []),
  ]);
  assert.deepEqual(bad, []);
  // The parser does find errors (a guard against a grammar that accepts anything).
  assert.notDeepEqual(promqlErrors('sum(rate(x[5m]) /'), []);
});
