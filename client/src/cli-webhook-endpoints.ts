// `mediagen webhooks endpoints list|get|create|update|delete|rotate-secret|test`: the workspace's
// webhook endpoints (changes need an owner key; create and rotate-secret print the secret once).
import { Command } from 'commander';
import type { MediaGenClient } from './client.js';
import { collect, int, print, table, usageError, type GlobalOpts } from './cli-support.js';
import type { WebhookEndpoint, WebhookEndpointUpdate } from './webhook-endpoints.js';

const columns = ['id', 'url', 'event_types', 'enabled', 'previous_secret_expires_at'];
const rowOf = (e: WebhookEndpoint) => ({ ...e, event_types: e.event_types.join(','), previous_secret_expires_at: e.previous_secret_expires_at ?? '-' });
const withSecret = (e: WebhookEndpoint & { secret: string }) => `${table([rowOf(e)], columns)}\nsigning secret (shown once, keep it): ${e.secret}`;

const bool = (name: string) => (v: string) => {
  if (v === 'true' || v === 'false') return v === 'true';
  usageError(`${name}: true or false`);
};

export function addWebhookEndpointCommands(webhooks: Command, client: () => MediaGenClient, globals: () => GlobalOpts): void {
  const endpoints = webhooks.command('endpoints').description('manage the webhook endpoints of the workspace (changes need an owner key)');
  endpoints
    .command('list')
    .description('every endpoint, oldest first')
    .action(async () => {
      const list = await client().webhookEndpoints.list();
      print(globals(), list, () => table(list.map(rowOf), columns));
    });
  endpoints
    .command('get')
    .argument('<id>', 'wep_…')
    .action(async (id: string) => {
      const e = await client().webhookEndpoints.get(id);
      print(globals(), e, () => table([rowOf(e)], columns));
    });
  endpoints
    .command('create')
    .description('a new endpoint; prints its signing secret, the only time it is shown')
    .requiredOption('--url <url>', 'where the events are POSTed (https)')
    .requiredOption('--event <type>', 'an event type or pattern (job.*, pipeline.*, budget.*, balance.*, job.completed, …); repeat for more', collect)
    .option('--description <text>', 'a note')
    .option('--enabled <bool>', 'true (default) or false', bool('--enabled'))
    .action(async (o: { url: string; event: string[]; description?: string; enabled?: boolean }) => {
      const e = await client().webhookEndpoints.create({ url: o.url, event_types: o.event, description: o.description, enabled: o.enabled });
      print(globals(), e, () => withSecret(e));
    });
  endpoints
    .command('update')
    .argument('<id>', 'wep_…')
    .option('--url <url>', 'a new URL')
    .option('--event <type>', 'the new event types (replacing the old); repeat for more', collect)
    .option('--description <text>', 'a new note')
    .option('--enabled <bool>', 'true or false', bool('--enabled'))
    .action(async (id: string, o: { url?: string; event?: string[]; description?: string; enabled?: boolean }) => {
      const body: WebhookEndpointUpdate = { url: o.url, event_types: o.event, description: o.description, enabled: o.enabled };
      const e = await client().webhookEndpoints.update(id, body);
      print(globals(), e, () => table([rowOf(e)], columns));
    });
  endpoints
    .command('delete')
    .argument('<id>', 'wep_…')
    .action(async (id: string) => {
      const r = await client().webhookEndpoints.delete(id);
      print(globals(), r, () => `deleted ${r.id}`);
    });
  endpoints
    .command('rotate-secret')
    .description('a new signing secret; the old one keeps signing during the overlap (both signatures sent)')
    .argument('<id>', 'wep_…')
    .option('--overlap-seconds <n>', 'how long the old secret keeps signing (default 86400; 0: stops now)', int('--overlap-seconds'))
    .action(async (id: string, o: { overlapSeconds?: number }) => {
      const e = await client().webhookEndpoints.rotateSecret(id, o.overlapSeconds === undefined ? {} : { overlap_seconds: o.overlapSeconds });
      print(globals(), e, () => withSecret(e));
    });
  endpoints
    .command('test')
    .description('send a signed webhook.ping to the endpoint')
    .argument('<id>', 'wep_…')
    .action(async (id: string) => {
      const p = await client().webhookEndpoints.test(id);
      print(globals(), p, () => `ping ${p.event_id} queued: mediagen webhooks deliveries --endpoint ${id}`);
    });
}
