// The append-only logs' row types, part of db/schema.ts's DB: the audit log (0026_audit_events) and
// each job's timeline (0029_receipts). The app role may insert into them but never change a row.
import type { ColumnType, Generated, Selectable } from 'kysely';
import type { AuditAction } from '../shared/audit.js';

type Json<T> = ColumnType<T, string, string>;

/** One administrative act on a workspace (0026_audit_events); append-only. */
export interface AuditEventTable {
  id: string;
  workspace_id: string;
  action: AuditAction;
  /** An owner's email, `key:<api key id>`, or `system:<component>`. */
  actor: string;
  /** What was acted on: 'api_key', 'webhook_secret', 'workspace', 'budget', 'job'; null when the workspace itself. */
  target_type: string | null;
  target_id: string | null;
  details: Json<Record<string, unknown>>;
  created_at: Generated<Date>;
}

/** One thing that happened to a job (0029_receipts); append-only, read in `id` order. */
export interface JobTimelineTable {
  id: Generated<string>;
  job_id: string;
  /** Unique per job: a write repeated after its commit adds nothing. */
  key: string;
  type: string;
  details: Json<Record<string, unknown>>;
  at: Generated<Date>;
}

export type AuditEvent = Selectable<AuditEventTable>;
