// The fleet roles' grants as docs/operations/managed-services.md lists them are db/fleet-roles.ts's,
// table by table and fleet by fleet (db-fleet-roles.test.ts holds the database to the same list).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { exceedsAppRole, fleetGrants, fleets } from '../../db/fleet-roles.js';

const page = readFileSync(fileURLToPath(new URL('../../../docs/operations/managed-services.md', import.meta.url)), 'utf8');

test('the documented fleet grants are exactly those granted', () => {
  const block = /<!-- fleet-grants:start -->\n([\s\S]*?)\n<!-- fleet-grants:end -->/.exec(page)?.[1];
  assert.ok(block, 'the fleet grants table is in the page');
  const rows = block
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('|'))
    .map((l) =>
      l
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    );
  const [header, , ...body] = rows;
  assert.deepEqual(header, ['Table', ...fleets]);
  const documented = Object.fromEntries(fleets.map((f) => [f, {} as Record<string, string>]));
  for (const [table, ...cells] of body) {
    cells.forEach((cell, i) => {
      if (cell !== '—') documented[fleets[i]!]![table!.replace(/`/g, '')] = cell;
    });
  }
  for (const fleet of fleets) assert.deepEqual(documented[fleet], { ...fleetGrants[fleet] }, `${fleet}: as documented`);
});

test('no fleet is granted more than the app role may have', () => {
  for (const fleet of fleets)
    for (const [table, spec] of Object.entries(fleetGrants[fleet])) assert.equal(exceedsAppRole(table, spec), null, `${fleet} ${table}`);
});
