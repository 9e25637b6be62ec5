// The Worker Versioning commands (worker/deployment.ts): which build takes new jobs, ramps, and
// retiring a drained build.
import { AdminError } from '../../db/repos/workspaces.js';
import type * as DeploymentModule from '../../worker/deployment.js';
import { nonNegativeInt, UsageError, type Command, type Context } from '../command.js';

const deploymentFlag = { type: 'string', help: 'Worker Deployment name (default WORKER_DEPLOYMENT_NAME)' } as const;
const buildIdFlag = { type: 'string', required: true, help: "the build's id (its workers log it as buildId; `deployment status` lists them)" } as const;

/** The deployment module, the Temporal connection and the names every `deployment` command needs. */
async function deploymentContext(ctx: Context, f: Record<string, string | boolean | undefined>) {
  const name = (f.deployment as string | undefined) ?? ctx.env.WORKER_DEPLOYMENT_NAME;
  if (!name) throw new UsageError('no deployment: pass --deployment or set WORKER_DEPLOYMENT_NAME');
  const d = (await import('../../worker/deployment.js')) as typeof DeploymentModule;
  const svc = (await ctx.temporal()).workflowService;
  return { d, svc, name, namespace: ctx.env.TEMPORAL_NAMESPACE || 'default', who: d.identity('mediagen-admin') };
}

export const deploymentCommands: Record<string, Command> = {
  'deployment status': {
    usage: 'deployment status [--deployment D]',
    summary: 'Worker Versioning: the current and ramping build, and each build with its status, drainage, running jobs and task queues',
    flags: { deployment: deploymentFlag },
    async run(ctx, f) {
      const { d, svc, name, namespace } = await deploymentContext(ctx, f);
      const state = await d.describeDeployment(svc, namespace, name);
      if (!state) throw new AdminError('not_found', `no worker of deployment ${name} has polled yet`);
      const versions = [];
      for (const v of state.versions) {
        const info = await d.describeVersion(svc, namespace, name, v.buildId);
        versions.push({
          ...v,
          drainage: info?.drainage ?? null,
          running: await d.runningOnVersion(svc, namespace, name, v.buildId),
          taskQueues: info?.taskQueues ?? [],
        });
      }
      const text = [
        `deployment ${name}: current ${state.current ?? '(unversioned workers)'}${state.ramping ? `, ramping ${state.ramping.buildId ?? '(unversioned)'} at ${state.ramping.percent}%` : ''}`,
        ...versions.map(
          (v) =>
            `  ${v.buildId}  ${v.status}${v.drainage ? ` (${v.drainage})` : ''}  running ${v.running}  created ${v.createdAt ?? '-'}  queues ${v.taskQueues.join(' ')}`,
        ),
      ];
      return { json: { ...state, versions }, text };
    },
  },
  'deployment promote': {
    usage: 'deployment promote --build-id B [--deployment D] [--force]',
    summary:
      'make a build the current version: new jobs start on it, running jobs stay on their build (rollout, or rollback to an earlier build); refused while the build misses a fleet',
    flags: {
      'build-id': buildIdFlag,
      deployment: deploymentFlag,
      force: { type: 'boolean', help: 'promote even though some task queue of the current build has no worker of this one' },
    },
    async run(ctx, f) {
      const { d, svc, name, namespace, who } = await deploymentContext(ctx, f);
      const buildId = f['build-id'] as string;
      const { previous } = await d.setCurrentVersion(svc, namespace, name, buildId, { force: !!f.force, identity: who });
      return {
        json: { deployment: name, current: buildId, previous },
        text: [`${name}: ${buildId} is the current version${previous && previous !== buildId ? ` (was ${previous}; its running jobs finish on it)` : ''}`],
      };
    },
  },
  'deployment guard': {
    usage: 'deployment guard --keep A,B --current A [--deployment D] [--wait SECONDS]',
    summary:
      "before a release changes the worker builds (the chart's pre-upgrade/pre-rollback hook): passes when the current build keeps its workers; else promotes the release's current build once it has workers on every queue, or refuses",
    flags: {
      keep: { type: 'string', required: true, help: 'the build ids whose workers the release runs, comma-separated' },
      current: { type: 'string', required: true, help: "the release's current build (one of --keep)" },
      deployment: deploymentFlag,
      wait: { type: 'string', help: "seconds to wait for the current build's workers (default 0)" },
    },
    async run(ctx, f) {
      const waitSeconds = f.wait === undefined ? 0 : nonNegativeInt('wait', f.wait as string);
      const keep = (f.keep as string)
        .split(',')
        .map((b) => b.trim())
        .filter(Boolean);
      const { d, svc, name, namespace, who } = await deploymentContext(ctx, f);
      const r = await d.guardRelease(svc, namespace, name, { keep, target: f.current as string, waitMs: waitSeconds * 1000, identity: who });
      return {
        json: { deployment: name, ...r },
        text: [
          r.promoted
            ? `${name}: ${r.current} is the current version now, before the release removes the previous one's workers`
            : `${name}: the current version ${r.current ?? '(none)'} keeps its workers in this release`,
        ],
      };
    },
  },
  'deployment ramp': {
    usage: 'deployment ramp --build-id B --percent N [--deployment D] [--force]',
    summary: 'send N% of new jobs to a build, the rest to the current one (0 ends the ramp)',
    flags: {
      'build-id': buildIdFlag,
      percent: { type: 'string', required: true, help: 'percentage of new jobs, 0–100' },
      deployment: deploymentFlag,
      force: { type: 'boolean', help: 'ramp even though the build misses a task queue' },
    },
    async run(ctx, f) {
      const percent = Number(f.percent);
      if (!Number.isFinite(percent) || percent < 0 || percent > 100) throw new UsageError('--percent must be a number from 0 to 100');
      const { d, svc, name, namespace, who } = await deploymentContext(ctx, f);
      await d.setRampingVersion(svc, namespace, name, f['build-id'] as string, percent, { force: !!f.force, identity: who });
      return {
        json: { deployment: name, ramping: percent > 0 ? f['build-id'] : null, percent },
        text: [percent > 0 ? `${name}: ${f['build-id'] as string} takes ${percent}% of new jobs` : `${name}: no ramp; the current version takes every new job`],
      };
    },
  },
  'deployment retire': {
    usage: 'deployment retire --build-id B [--deployment D] [--wait SECONDS]',
    summary: 'once a build that is no longer current has no running jobs (waits up to --wait), delete its version; stop its workers first',
    flags: {
      'build-id': buildIdFlag,
      deployment: deploymentFlag,
      wait: { type: 'string', help: 'seconds to wait for its running jobs to finish (default 0)' },
    },
    async run(ctx, f) {
      const waitSeconds = f.wait === undefined ? 0 : nonNegativeInt('wait', f.wait as string);
      const { d, svc, name, namespace, who } = await deploymentContext(ctx, f);
      const buildId = f['build-id'] as string;
      const state = await d.describeDeployment(svc, namespace, name);
      if (state?.current === buildId || state?.ramping?.buildId === buildId) {
        throw new AdminError(
          'conflict',
          `${buildId} is the ${state.current === buildId ? 'current' : 'ramping'} version: promote another build (or end the ramp) first`,
        );
      }
      const deadline = Date.now() + waitSeconds * 1000;
      let running = await d.runningOnVersion(svc, namespace, name, buildId);
      while (running > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 2000));
        running = await d.runningOnVersion(svc, namespace, name, buildId);
      }
      if (running > 0)
        throw new AdminError('conflict', `${buildId} still runs ${running} job(s) pinned to it: keep its workers up and try again later (or --wait)`);
      await d.deleteVersion(svc, namespace, name, buildId, who);
      return { json: { deployment: name, retired: buildId }, text: [`${name}: ${buildId} has no running jobs; its version is deleted`] };
    },
  },
};
