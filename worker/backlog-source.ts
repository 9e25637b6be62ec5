// The fleet-wide gauges' source (worker/metrics.ts BacklogSource), read on scrape by the holder of
// the control fleet's `fleet-gauges` lease (worker/control-fleet.ts) only.
import type { Client } from '@temporalio/client';
import { sql } from 'kysely';
import protos from '@temporalio/proto';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import { providerNames, taskQueues } from '../workflows/definitions.js';
import { openCircuitsByWorkspace } from '../db/repos/webhooks.js';
import { circuitPolicy } from '../activities/webhooks.js';
import { deprecatedRoutes, probedRoutes as probedRouteRows } from '../db/repos/route-probes.js';
import { slotUsage } from '../db/repos/route-slots.js';
import { SLOT_WAITER_FRESH_MS } from '../shared/route-slots.js';
import { workspaceQueues } from '../db/repos/queue.js';
import { describeDeployment, runningOnVersion } from './deployment.js';
import type { BacklogSource } from './metrics.js';
import { RECENT_WINDOW_SECONDS } from './queue-metrics.js';

/**
 * The fleet-wide gauges, read on scrape by the holder of the `fleet-gauges` lease: the webhook
 * outbox from Postgres, and each task queue's approximate backlog from the Temporal server.
 */
export function createBacklogSource(db: Database, client: Client, config: Config): BacklogSource {
  const queues = taskQueues(config.TASK_QUEUE_PREFIX);
  return {
    async webhooks() {
      const row = await sql<{ pending: number; age: number | null }>`
        select count(*)::int as pending, extract(epoch from now() - min(created_at))::float8 as age
        from webhook_deliveries where delivered_at is null and failed_at is null and superseded_at is null`.execute(db);
      const r = row.rows[0];
      return { pending: r?.pending ?? 0, oldestAgeSeconds: r?.age ?? 0 };
    },
    workspaceQueues: () => workspaceQueues(db, RECENT_WINDOW_SECONDS),
    openWebhookCircuits: () => {
      const policy = circuitPolicy(config);
      return openCircuitsByWorkspace(db, new Date(Date.now() - policy.cooldownMs - policy.trialTimeoutMs - 60_000));
    },
    async taskQueues() {
      const names = [
        { name: queues.workflows, type: protos.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW },
        ...[queues.io, queues.fetch, queues.webhooks, ...providerNames.flatMap((p) => [queues.provider(p), queues.providerWaits(p)])].map((name) => ({
          name,
          type: protos.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        })),
      ];
      return Promise.all(
        names.map(async ({ name, type }) => {
          const res = await client.workflowService.describeTaskQueue({
            namespace: config.TEMPORAL_NAMESPACE,
            taskQueue: { name },
            taskQueueType: type,
            reportStats: true,
          });
          const stats = res.stats;
          const age = stats?.approximateBacklogAge;
          return {
            taskQueue: name,
            backlog: Number(stats?.approximateBacklogCount ?? 0),
            ageSeconds: age ? Number(age.seconds ?? 0) + (age.nanos ?? 0) / 1e9 : 0,
          };
        }),
      );
    },
    async versionsWithoutPollers() {
      const name = config.WORKER_DEPLOYMENT_NAME;
      if (!name) return [];
      const svc = client.workflowService;
      const deployment = await describeDeployment(svc, config.TEMPORAL_NAMESPACE, name);
      if (!deployment) return [];
      // One describe for the workflows queue: the server lists the pollers of every version of it.
      const res = await svc.describeTaskQueue({
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: { name: queues.workflows },
        taskQueueType: protos.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        reportPollers: true,
      });
      const freshSince = Date.now() - config.VERSION_POLLERS_FRESH_MS;
      const polled = new Set(
        (res.pollers ?? [])
          .filter((p) => p.deploymentOptions?.deploymentName === name && Number(p.lastAccessTime?.seconds ?? 0) * 1000 >= freshSince)
          .map((p) => p.deploymentOptions!.buildId ?? ''),
      );
      const out: { deployment: string; buildId: string; running: number }[] = [];
      for (const v of deployment.versions) {
        if (v.status === 'drained' || polled.has(v.buildId)) continue;
        const running = await runningOnVersion(svc, config.TEMPORAL_NAMESPACE, name, v.buildId);
        if (running > 0) out.push({ deployment: name, buildId: v.buildId, running });
      }
      return out;
    },
    routeProbes: async () => (await probedRouteRows(db)).map((r) => ({ provider: r.provider, model: r.model, available: r.status === 'available' })),
    routeLifecycles: async () => (await deprecatedRoutes(db)).map((r) => ({ provider: r.provider, model: r.model, shutdownAt: r.shutdown_at })),
    routeSlots: () => slotUsage(db, SLOT_WAITER_FRESH_MS),
  };
}
