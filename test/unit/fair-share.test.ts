// Fair share per workspace, without a server: the tiers and weights an operator may set, the
// Temporal Priority a job starts with (with and without FAIR_SHARE), and that every shipped
// topology's Temporal server turns fairness on (a server without it ignores fairness keys).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { fairShareTiers, fairShareWeightRange, parseFairShareWeight, tierOfWeight } from '../../shared/fair-share.js';
import { taskPriority } from '../../shared/task-priority.js';
import { loadConfig } from '../../shared/config.js';

const env = {
  DATABASE_URL: 'postgres://media@127.0.0.1:5432/media',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  S3_ENDPOINT: 'http://127.0.0.1:9000',
  S3_ACCESS_KEY: 'media',
  S3_SECRET_KEY: 'not-a-real-secret',
};
const root = (p: string) => fileURLToPath(new URL(`../../../${p}`, import.meta.url));

describe('fair-share weights', () => {
  test('every tier is a weight Temporal and the database accept, standard being the default 1', () => {
    assert.equal(fairShareTiers.standard, 1);
    for (const w of Object.values(fairShareTiers)) assert.ok(w >= fairShareWeightRange.min && w <= fairShareWeightRange.max);
    assert.ok(fairShareTiers.bulk < fairShareTiers.standard && fairShareTiers.standard < fairShareTiers.priority);
    assert.equal(tierOfWeight(3), 'priority');
    assert.equal(tierOfWeight(2.5), undefined);
  });

  test('a weight is a plain decimal number from 0.001 to 1000', () => {
    for (const ok of ['0.001', '1', '2.5', '.5', '1000', ' 3 ']) assert.deepEqual(parseFairShareWeight(ok), { weight: Number(ok) }, ok);
    for (const bad of ['0', '0.0009', '1000.01', '-1', '1e3', 'Infinity', 'NaN', '', 'three', '0x10']) {
      assert.ok('error' in parseFairShareWeight(bad), bad);
    }
  });
});

describe('the Priority a job starts with', () => {
  const job = { workspaceId: 'ws_a', priority: 'normal' as const, fairnessWeight: 3 };
  test('fair share on (the default): the workspace is the fairness key, with its weight', () => {
    assert.deepEqual(taskPriority(job), { priorityKey: 3, fairnessKey: 'ws_a', fairnessWeight: 3 });
    assert.equal(loadConfig(env).FAIR_SHARE, true);
  });
  test('FAIR_SHARE=false: the priority key only, one FIFO per priority', () => {
    assert.deepEqual(taskPriority(job, { fairness: false }), { priorityKey: 3 });
    assert.equal(loadConfig({ ...env, FAIR_SHARE: 'false' }).FAIR_SHARE, false);
  });
});

describe('every topology turns fairness on', () => {
  test('the prod dynamic config: matching.enableFairness true, tasks written to one partition', () => {
    const dynamic = parse(readFileSync(root('scripts/prod/temporal-dynamicconfig.yaml'), 'utf8')) as Record<string, Array<{ value: unknown }>>;
    assert.deepEqual(dynamic['matching.enableFairness'], [{ value: true }]);
    assert.deepEqual(dynamic['matching.numTaskqueueWritePartitions'], [{ value: 1 }]);
  });

  test('the prod profile and docker-compose run their server on that file', () => {
    assert.match(readFileSync(root('scripts/stack-prod.sh'), 'utf8'), /TEMPORAL_DYNAMIC_CONFIG="\$ROOT\/scripts\/prod\/temporal-dynamicconfig\.yaml"/);
    const compose = parse(readFileSync(root('docker-compose.yml'), 'utf8'), { merge: true }) as {
      services: Record<string, { environment?: Record<string, string>; volumes?: string[] }>;
    };
    const temporal = compose.services.temporal!;
    const path = temporal.environment?.DYNAMIC_CONFIG_FILE_PATH;
    assert.ok(path);
    assert.ok(temporal.volumes?.some((v) => v.startsWith('./scripts/prod/temporal-dynamicconfig.yaml:') && v.split(':')[1] === path));
  });

  test('the dev and test servers (scripts/stack.sh): fairness on, one partition per queue', () => {
    const stack = readFileSync(root('scripts/stack.sh'), 'utf8');
    for (const v of ['matching.enableFairness=true', 'matching.numTaskqueueReadPartitions=1', 'matching.numTaskqueueWritePartitions=1']) {
      assert.match(stack, new RegExp(`--dynamic-config-value ${v.replace(/\./g, '\\.')}`));
    }
  });
});
