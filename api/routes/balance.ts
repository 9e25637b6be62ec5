// GET /v1/balance (extension): the workspace's credits, from one snapshot: available, held by jobs
// in flight, granted and spent this period (a UTC calendar month), and the owner's low-balance
// thresholds. PUT /v1/balance/alerts (owner keys only): replaces the thresholds and the URL their
// `balance.low` events go to; audited. The rules are in docs/api/balance.md.
import { z } from 'zod';
import type { AppDeps } from '../deps.js';
import { authOf, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { ApiError, invalidRequest } from '../errors.js';
import { parseOr400 } from '../validate.js';
import { webhookRequestFields } from '../webhooks.js';
import { readBalance, setBalanceAlerts } from '../../db/repos/balance.js';
import { hasActiveWebhookSecret } from '../../db/repos/webhooks.js';
import { balancePeriod, MAX_BALANCE_THRESHOLD, MAX_BALANCE_THRESHOLDS } from '../../shared/balance.js';
import { keyActor } from '../../shared/audit.js';
import { checkWebhookUrl } from '../../shared/webhooks/target.js';
import { FetchError } from '../../shared/fetch-remote.js';

const credits = (what: string) => z.number().int().describe(what);

const balanceSchema = z.object({
  unit: z.literal('credits').describe('the unit of every amount: credits, as prices and the ledger count them'),
  available: credits(
    'credits the workspace can spend now: what a create is charged from (every grant, less every deduct, charge and recharge, plus every refund)',
  ),
  held: credits(
    'credits charged to the jobs still in flight (pending or generating), net of what they were refunded; already taken from `available`, given back by a failure or cancel, kept by a completion',
  ),
  granted_this_period: credits('credits the operator granted in the period'),
  deducted_this_period: credits('credits the operator deducted in the period'),
  spent_this_period: credits('net credits charged to jobs in the period: charges and recharges less refunds, by when each ledger row was written'),
  refunded_this_period: credits('credits refunded to jobs in the period (already subtracted from spent_this_period)'),
  period: z
    .object({
      start: z.string().describe('the start of the period: 00:00 UTC on the first day of the current calendar month (ISO 8601)'),
      end: z.string().describe('the start of the next period (ISO 8601)'),
    })
    .describe('the period the *_this_period figures cover: the current UTC calendar month'),
  thresholds: z
    .array(z.number().int())
    .describe(
      'the owner-set low-balance thresholds in credits, highest first: a charge that takes `available` from at or above one to below it sends one balance.low event',
    ),
});

const thresholdsField = z
  .array(z.number().int().min(1).max(MAX_BALANCE_THRESHOLD))
  .max(MAX_BALANCE_THRESHOLDS)
  .describe(
    `the low-balance thresholds in credits, 1 to ${MAX_BALANCE_THRESHOLD}, at most ${MAX_BALANCE_THRESHOLDS} (duplicates are merged); [] turns the alerts off`,
  );

const alertUrl = webhookRequestFields.webhook_url
  .unwrap()
  .describe('where the balance.low events are POSTed, signed with the workspace webhook secret (https; the workspace must have a webhook signing secret)');

/** What the handler accepts; the document states the same as two shapes (alertsBody). */
const alertsInput = z.strictObject({ thresholds: thresholdsField, url: alertUrl.nullable().optional() });

const alertsBody = z
  .union([
    z
      .strictObject({
        thresholds: thresholdsField.min(1),
        url: alertUrl.nullable().optional().describe('where their events go; null or absent: only to the webhook endpoints subscribed to balance.low'),
      })
      .describe('alerts on: at least one threshold, and where their events go'),
    z
      .strictObject({ thresholds: z.array(z.number().int()).max(0).describe('no thresholds'), url: z.null().optional().describe('null or absent') })
      .describe('alerts off'),
  ])
  .describe('the new settings, replacing the old ones');

/**
 * The body, checked: the thresholds' bounds, then that no thresholds take no URL (worded as one rule,
 * not as two shapes failing). Thresholds without a URL send their events to the workspace's webhook
 * endpoints subscribed to balance.low only (docs/api/webhook-endpoints.md).
 */
function parseAlerts(raw: unknown): z.infer<typeof alertsBody> {
  const body = parseOr400(alertsInput, raw);
  if (body.thresholds.length === 0 && (body.url ?? null) !== null) throw invalidRequest('url: must be null or absent when thresholds is empty (alerts off)');
  return body as z.infer<typeof alertsBody>;
}

const balanceAlertsSchema = z.object({
  thresholds: z.array(z.number().int()).describe('the thresholds now in force, in credits, highest first'),
  url: z.string().nullable().describe('where the balance.low events go (null: alerts off)'),
});

const ownerOnly = () =>
  new ApiError(403, 'owner_key_required', 'the balance alerts can be set only with an owner key: a key created by a member who is an owner of the workspace');

/** Distinct, highest first: the order the trigger checks them in does not matter, but the answer is stable. */
const normalized = (thresholds: number[]) => [...new Set(thresholds)].sort((a, b) => b - a);

export const balanceEndpoints = new Endpoints<AppDeps>()
  .add({
    method: 'get',
    path: '/v1/balance',
    summary: "The workspace's credit balance (extension)",
    description:
      'Available credits, the credits held by jobs in flight, what was granted, deducted, spent and refunded in the current UTC calendar month, and the low-balance thresholds. ' +
      'Every figure is from one snapshot of the ledger. Any key of the workspace may read it.',
    tags: ['Balance'],
    scope: 'read',
    rateClass: 'poll',
    response: balanceSchema,
    errors: [401, 429, 500],
    async handler({ res, services: deps }) {
      const { workspaceId } = authOf(res);
      const { start, end } = balancePeriod((deps.clock ?? (() => new Date()))());
      const b = await readBalance(deps.db, workspaceId, start, end);
      // An authenticated key's workspace exists: its keys go with it.
      if (!b) throw new Error(`workspace ${workspaceId} of an authenticated key not found`);
      res.json({
        data: {
          unit: 'credits',
          available: b.available,
          held: b.held,
          granted_this_period: b.granted,
          deducted_this_period: b.deducted,
          spent_this_period: b.spent - b.refunded,
          refunded_this_period: b.refunded,
          period: { start: start.toISOString(), end: end.toISOString() },
          thresholds: normalized(b.thresholds),
        } satisfies z.infer<typeof balanceSchema>,
      });
    },
  })
  .add({
    method: 'put',
    path: '/v1/balance/alerts',
    summary: 'Set the low-balance alerts (extension; owner keys only)',
    description:
      'Replaces the thresholds and the URL of the balance.low events. A charge that takes the available credits from at or above a threshold to below it sends one event, ' +
      'however many creates race; a grant or refund back to at or above it arms it again. Only an owner key may set them (403 owner_key_required); ' +
      'a URL needs the workspace to have a webhook signing secret. Each change is an audit event (balance.alerts_set).',
    tags: ['Balance'],
    scope: 'admin',
    rateClass: 'generate',
    body: alertsBody,
    parseBody: parseAlerts,
    response: balanceAlertsSchema,
    errors: [400, 401, 403, 415, 429, 500],
    async handler({ res, body, services: deps }) {
      const { workspaceId, apiKeyId, owner } = authOf(res);
      if (!owner) throw ownerOnly();
      const thresholds = normalized(body.thresholds);
      const url = body.url ?? null;
      if (url !== null) {
        try {
          checkWebhookUrl(url, deps.config.WEBHOOK_ALLOW_LOOPBACK);
        } catch (err) {
          if (err instanceof FetchError) throw new ApiError(400, 'invalid_request', `url: ${err.message}`);
          throw err;
        }
        if (!(await hasActiveWebhookSecret(deps.db, workspaceId))) {
          throw new ApiError(
            400,
            'invalid_request',
            'url: this workspace has no webhook signing secret yet; an owner creates one with the admin CLI (webhook secret rotate)',
          );
        }
      }
      const { current } = await setBalanceAlerts(deps.db, workspaceId, { thresholds, url }, keyActor(apiKeyId));
      res.json({ data: { thresholds: normalized(current.thresholds), url: current.url } });
    },
  });

export const createBalanceRouter = (deps: AppDeps, auth: Auth) => balanceEndpoints.router(deps, auth);
