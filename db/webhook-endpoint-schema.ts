// The webhook endpoints' row type (0110_webhook_endpoints), part of db/schema.ts's DB.
import type { Generated, Selectable } from 'kysely';

/** A receiver the workspace manages: its URL, the events it subscribes to, and its signing secrets (encrypted). */
interface WebhookEndpointTable {
  id: string;
  workspace_id: string;
  url: string;
  description: string | null;
  /** Exact event names or the patterns job.*, pipeline.*, budget.*, balance.*. */
  event_types: string[];
  enabled: Generated<boolean>;
  secret_id: string;
  secret_encrypted: string;
  /** The secret a rotation replaced: it signs too until previous_expires_at. */
  previous_secret_id: string | null;
  previous_secret_encrypted: string | null;
  previous_expires_at: Date | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export type WebhookEndpoint = Selectable<WebhookEndpointTable>;

/** This file's tables, as the database interface (db/schema.ts `DB`) lists them. */
export interface WebhookEndpointTables {
  webhook_endpoints: WebhookEndpointTable;
}
