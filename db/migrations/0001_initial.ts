// The whole first schema. Money-like values are integers; the credit balance can never go
// negative (CHECK), and the ledger's (job_id, job_seq) uniqueness makes settlement idempotent.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('workspaces')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('credits', 'bigint', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`credits >= 0`),
    )
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('workspace_members')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull().check(sql`role in ('owner', 'member')`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('workspace_members_pk', ['workspace_id', 'email'])
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('api_keys_workspace_idx').on('api_keys').columns(['workspace_id', 'created_at']).execute();

  await db.schema
    .createTable('projects')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('projects_workspace_page_idx').on('projects').columns(['workspace_id', 'created_at', 'id']).execute();

  await db.schema
    .createTable('voices')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('gender', 'text', (c) => c.notNull())
    .addColumn('language', 'text', (c) => c.notNull())
    .addColumn('accent', 'text', (c) => c.notNull())
    .addColumn('preview_key', 'text', (c) => c.notNull())
    .addColumn('tts_voice', 'text', (c) => c.notNull())
    .addColumn('provider_voice_id', 'text')
    .addColumn('sort_key', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('voices_page_idx').on('voices').columns(['sort_key', 'id']).execute();

  await db.schema
    .createTable('actors')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('age', 'text', (c) => c.notNull())
    .addColumn('gender', 'text', (c) => c.notNull())
    .addColumn('skin_tone', 'text', (c) => c.notNull())
    .addColumn('is_pro', 'boolean', (c) => c.notNull())
    .addColumn('default_voice_id', 'text', (c) => c.references('voices.id').onDelete('set null'))
    .addColumn('reference_image_key', 'text', (c) => c.notNull())
    .addColumn('preview_video_key', 'text', (c) => c.notNull())
    .addColumn('preview_thumbnail_key', 'text', (c) => c.notNull())
    .addColumn('sort_key', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('actors_page_idx').on('actors').columns(['sort_key', 'id']).execute();

  await db.schema
    .createTable('file_uploads')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('object_key', 'text', (c) => c.notNull())
    .addColumn('file_type', 'text', (c) => c.notNull().check(sql`file_type in ('image', 'video')`))
    .addColumn('mime_type', 'text', (c) => c.notNull())
    .addColumn('file_size', 'bigint', (c) => c.notNull().check(sql`file_size >= 0`))
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'completed', 'failed')`))
    .addColumn('source_url', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('file_uploads_workspace_idx').on('file_uploads').columns(['workspace_id', 'id']).execute();

  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('image', 'video', 'replace_actor', 'talking_actor')`))
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('api_key_id', 'text', (c) => c.references('api_keys.id').onDelete('set null'))
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'generating', 'completed', 'failed')`))
    .addColumn('params', 'jsonb', (c) => c.notNull())
    .addColumn('error', 'jsonb')
    .addColumn('price', 'integer', (c) => c.notNull().check(sql`price >= 0`))
    .addColumn('outputs', 'jsonb')
    .addColumn('provider_ref', 'jsonb')
    .addColumn('workflow_started', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('started_at', 'timestamptz')
    .addColumn('finished_at', 'timestamptz')
    .execute();
  // Status reads are by (id, workspace); the primary key serves them. The reconciler looks for
  // jobs whose workflow never started, and for in-flight jobs whose workflow may have closed.
  await db.schema.createIndex('jobs_unstarted_idx').on('jobs').column('created_at').where(sql.ref('workflow_started'), '=', false).execute();
  await db.schema.createIndex('jobs_in_flight_idx').on('jobs').column('updated_at').where(sql.ref('status'), 'in', ['pending', 'generating']).execute();
  await db.schema.createIndex('jobs_workspace_idx').on('jobs').columns(['workspace_id', 'created_at']).execute();

  await db.schema
    .createTable('credit_ledger')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('job_id', 'text', (c) => c.references('jobs.id').onDelete('cascade'))
    .addColumn('job_seq', 'integer')
    .addColumn('delta', 'bigint', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull().check(sql`reason in ('charge', 'refund', 'recharge', 'grant', 'deduct')`))
    .addColumn('note', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('credit_ledger_job_seq_check', sql`(job_id is null) = (job_seq is null)`)
    .execute();
  await db.schema.createIndex('credit_ledger_job_seq_uq').on('credit_ledger').columns(['job_id', 'job_seq']).unique().execute();
  await db.schema.createIndex('credit_ledger_workspace_idx').on('credit_ledger').columns(['workspace_id', 'created_at']).execute();

  await db.schema
    .createTable('rate_limits')
    .addColumn('api_key_id', 'text', (c) => c.notNull().references('api_keys.id').onDelete('cascade'))
    .addColumn('class', 'text', (c) => c.notNull())
    .addColumn('window_start', 'timestamptz', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('rate_limits_pk', ['api_key_id', 'class'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['rate_limits', 'credit_ledger', 'jobs', 'file_uploads', 'actors', 'voices', 'projects', 'api_keys', 'workspace_members', 'workspaces']) {
    await db.schema.dropTable(table).execute();
  }
}
