// Direct uploads: a `pending` row is written when a client asks to send its bytes straight to
// storage, with the moment after which the sweep removes it (and its object) if it was never
// completed. Completed uploads have no expiry.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('file_uploads').addColumn('expires_at', 'timestamptz').execute();
  await db.schema.createIndex('file_uploads_pending_expiry_idx').on('file_uploads').column('expires_at').where(sql.ref('status'), '=', 'pending').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('file_uploads_pending_expiry_idx').execute();
  await db.schema.alterTable('file_uploads').dropColumn('expires_at').execute();
}
