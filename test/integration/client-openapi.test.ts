// The client's generated types (client/src/openapi.ts) match the document the gateway serves:
// a gateway change that alters the contract fails here until `npm run client:types` is run.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/stack.js';
import { startGateway, type InProcessGateway as Gateway } from '../support/services.js';
import { clientTypesPath, clientTypesSource } from '../../scripts/generate/client-types.js';

let tdb: TestDatabase;
let gw: Gateway;

before(async () => {
  tdb = await createTestDatabase();
  gw = await startGateway(testConfig(tdb.url), tdb.db);
});

after(async () => {
  await gw?.close();
  await tdb?.drop();
});

test('client/src/openapi.ts is what openapi-typescript makes of GET /v1/openapi.json', async () => {
  const res = await fetch(`${gw.baseUrl}/v1/openapi.json`);
  assert.equal(res.status, 200);
  const generated = await clientTypesSource(await res.json());
  const checkedIn = await readFile(clientTypesPath, 'utf8');
  assert.ok(generated === checkedIn, 'client/src/openapi.ts is stale: run `npm run client:types` and commit the result');
});
