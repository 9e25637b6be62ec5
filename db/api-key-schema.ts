// The rule columns of `api_keys` (0105_scoped_keys), part of db/schema.ts's ApiKeyTable. NULL in a
// column: no such rule (a key from before them keeps the full access of its member role).
import type { ColumnType } from 'kysely';
import type { ApiKeyScope } from '../shared/api-key-rules.js';

export interface ApiKeyRuleColumns {
  /** What the key may call (api/operations.ts `scope`); null: every scope. */
  scopes: ApiKeyScope[] | null;
  /** The models its creates may use; null: any. */
  allowed_models: string[] | null;
  /** The job kinds its creates may make; null: any. */
  allowed_kinds: string[] | null;
  /** CIDRs the key may be presented from (Postgres cidr[]; read as text[]); null: anywhere. */
  allowed_ips: ColumnType<string[] | null, string[] | null | undefined, string[] | null>;
  /** After this the key answers 401; null: never. */
  expires_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}
