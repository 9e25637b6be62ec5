// `mediagen webhooks deliveries [--job ID --endpoint ID --event TYPE --status S]`, `mediagen webhooks redeliver ID`
// and `mediagen webhooks endpoints …` (cli-webhook-endpoints.ts).
import { Command, Option } from 'commander';
import type { MediaGenClient } from './client.js';
import { int, print, table, type GlobalOpts } from './cli-support.js';
import type { WebhookDelivery } from './webhook-deliveries.js';
import { addWebhookEndpointCommands } from './cli-webhook-endpoints.js';

const statuses = ['pending', 'delivered', 'failed', 'superseded'] as const;

/** One line per event: its attempts as `status code or error class (latency)`. */
function rowOf(d: WebhookDelivery): Record<string, unknown> {
  const attempts = d.attempts.map((a) => `${a.status_code ?? a.error_class ?? '…'}${a.latency_ms === null ? '' : ` (${a.latency_ms} ms)`}`).join(', ');
  return {
    id: d.id,
    event: d.event,
    job_id: d.job_id ?? '-',
    endpoint: d.endpoint_id ?? '-',
    status: d.status,
    host: d.host,
    attempts: attempts || '-',
    next_retry_at: d.circuit_open_until ? `${d.next_retry_at} (circuit open)` : (d.next_retry_at ?? '-'),
  };
}

const columns = ['id', 'event', 'job_id', 'endpoint', 'status', 'host', 'attempts', 'next_retry_at'];

export function addWebhookCommands(program: Command, client: () => MediaGenClient, globals: () => GlobalOpts): void {
  const webhooks = program.command('webhooks').description("inspect the workspace's webhook deliveries and send one again");
  webhooks
    .command('deliveries')
    .description('list webhook deliveries with their attempts, newest first')
    .option('--job <id>', "only this job's events")
    .option('--endpoint <id>', "only this webhook endpoint's deliveries")
    .option('--event <type>', 'only events of this type, e.g. job.completed')
    .addOption(new Option('--status <status>', 'only events in this status').choices(statuses))
    .option('--limit <n>', '1-100', int('--limit'))
    .option('--cursor <cursor>', 'next_cursor of the previous page')
    .action(async (o) => {
      const page = await client().webhookDeliveries.list({
        job_id: o.job,
        endpoint_id: o.endpoint,
        event: o.event,
        status: o.status,
        limit: o.limit,
        cursor: o.cursor,
      });
      print(globals(), page, () => table(page.data.map(rowOf), columns) + (page.next_cursor ? `\nnext: --cursor ${page.next_cursor}` : ''));
    });
  webhooks
    .command('redeliver')
    .description('send a finished webhook event again (same webhook-id, signed afresh)')
    .argument('<id>', 'the event id (webhook-id), whk_…')
    .action(async (id: string) => {
      const d = await client().webhookDeliveries.redeliver(id);
      print(globals(), d, () => `redelivering ${d.id} (${d.event}) to ${d.host}: redelivery ${d.redeliveries}`);
    });
  addWebhookEndpointCommands(webhooks, client, globals);
}
