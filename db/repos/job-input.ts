// What a job's create is given (db/repos/jobs.ts insertJobWithCharge), apart so the repo stays small.
import type { JobKind, WebhookEventName } from '../schema.js';
import type { JobPriority } from '../../shared/job-model.js';

export interface NewJobInput {
  id: string;
  kind: JobKind;
  workspaceId: string;
  projectId: string;
  apiKeyId: string;
  model: string;
  params: Record<string, unknown>;
  price: number;
  /** Where the job's webhook events go, and which (0007_webhooks). */
  webhook?: { url: string; events: WebhookEventName[] } | null;
  /** The customer's `deadline_seconds`: the job's `deadline_at` is the insert's now() plus this (absent: no deadline). */
  deadlineSeconds?: number | null;
  /** Its priority in the queues (default normal). */
  priority?: JobPriority;
  /** The caller checked the key's and project's budgets under their counters' locks (jobs/budgets.ts); else a budgeted create throws BudgetsApplyError. */
  budgetsChecked?: boolean;
  /** The create's metadata and tags (0115_labels): stored on the row, and one job_labels row each. */
  metadata?: Record<string, string>;
  tags?: string[];
  /** The key of the canonical request when the create opted into reuse (jobs/reuse.ts); absent: not reused. */
  reuseKey?: string | null;
}
