// The restarter's terminate reason is the one an operator's terminate of a pipeline parent is told
// apart by (worker/pipeline-operator-ends.ts): every reason it writes is recognized as its own, and
// an operator's — whatever it says — is not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isRestartReason, restartTerminateReason } from '../../worker/pipeline-operator-ends.js';

test("the restarter's own terminate reasons are recognized, an operator's are not", () => {
  for (const ms of [0, 1000, 600_000, 86_400_000]) assert.equal(isRestartReason(restartTerminateReason(ms)), true, restartTerminateReason(ms));
  for (const reason of [
    'operator: wrong pipeline',
    '',
    'pipeline stalled',
    `${restartTerminateReason(1000)} (by hand)`,
    `by hand: ${restartTerminateReason(1000)}`,
  ])
    assert.equal(isRestartReason(reason), false, reason);
});
