// Each workflow type's Worker Versioning behaviour (worker/deployment.ts), declared next to it.
// Only a versioned worker may send one: the server refuses the workflow task completions of an
// unversioned worker (the test suites' in-process fleets) that carry a behaviour, so the option is
// computed per run from the version of the worker running it. Its default is PINNED as well.
import { setWorkflowOptions, workflowInfo } from '@temporalio/workflow';

export function setVersioningBehavior(behavior: 'PINNED' | 'AUTO_UPGRADE', ...workflows: ((...args: never[]) => Promise<unknown>)[]): void {
  for (const wf of workflows) setWorkflowOptions(() => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: behavior } : {}), wf);
}
