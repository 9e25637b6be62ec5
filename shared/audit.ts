// The audit log's vocabulary: what an audit event can record. Each administrative act on a workspace
// writes exactly one event (db/repos/audit.ts), in the same transaction as the act itself.
export const auditActions = [
  'api_key.created',
  'api_key.revoked',
  'webhook_secret.rotated',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.deleted',
  'webhook_endpoint.secret_rotated',
  'credits.granted',
  'credits.deducted',
  'budget.set',
  'budget.removed',
  'balance.alerts_set',
  'job.outputs_deleted',
  'job.reset_detected',
  'job.terminated_detected',
  'bulk_action.created',
  'workspace.share_changed',
  'workspace.priority_changed',
  'workspace.reuse_changed',
  'member.added',
  'member.role_changed',
  'member.removed',
] as const;
export type AuditAction = (typeof auditActions)[number];

/** Who acted: an owner's email (admin CLI), an API key id (`key:<id>`), or `system:<component>`. */
export type AuditActor = string;

/** The operator's acts through the admin CLI that name no acting owner (credits, fair share, priority). */
export const OPERATOR_ACTOR: AuditActor = 'system:admin-cli';
/**
 * An operator's act through the admin CLI on behalf of an owner (`--as`): the owner is named, and so
 * is the fact that an operator did it, so the customer's log never shows an act as the owner's own.
 */
export const operatorFor = (ownerEmail: string): AuditActor => `${OPERATOR_ACTOR} for ${ownerEmail}`;

/** The reconciler's detections of what an operator did in Temporal (a terminate, a reset). */
export const RECONCILER_ACTOR: AuditActor = 'system:reconciler';

/** The actor of an act done with an API key. */
export const keyActor = (apiKeyId: string): AuditActor => `key:${apiKeyId}`;
