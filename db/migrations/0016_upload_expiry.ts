// Uploads expire and can be deleted:
// - `status` gains `expired` (its retention ran out) and `deleted` (the workspace deleted it); both
//   rows stay as tombstones, so a media link answers 410 and a job create names why.
// - `expires_at`, already the pending deadline of a direct upload, is also when a completed upload
//   stops being served; uploads completed before this migration get the default retention (30 days)
//   counted from their creation.
// - `retention_seconds`: the lifetime a direct upload asked for, applied when it completes.
// - `objects_removed_at`: when the sweep (or the delete) removed the upload's objects; an expired or
//   deleted upload that a job in flight still reads keeps them until that job ends.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table file_uploads drop constraint file_uploads_status_check`.execute(db);
  await sql`alter table file_uploads add constraint file_uploads_status_check check (status in ('pending', 'completed', 'failed', 'expired', 'deleted'))`.execute(
    db,
  );
  await db.schema.alterTable('file_uploads').addColumn('retention_seconds', 'integer').addColumn('objects_removed_at', 'timestamptz').execute();
  await sql`update file_uploads set expires_at = created_at + interval '30 days' where status = 'completed' and expires_at is null`.execute(db);
  await db.schema.createIndex('file_uploads_completed_expiry_idx').on('file_uploads').column('expires_at').where(sql.ref('status'), '=', 'completed').execute();
  await db.schema
    .createIndex('file_uploads_objects_left_idx')
    .on('file_uploads')
    .column('updated_at')
    .where(sql<boolean>`status in ('expired', 'deleted') and objects_removed_at is null`)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('file_uploads_objects_left_idx').execute();
  await db.schema.dropIndex('file_uploads_completed_expiry_idx').execute();
  // Tombstones cannot be expressed before this migration: they become refused uploads, which the
  // failed-upload sweep removes; completed uploads lose their expiry again.
  await sql`update file_uploads set status = 'failed', expires_at = null where status in ('expired', 'deleted')`.execute(db);
  await sql`update file_uploads set expires_at = null where status = 'completed'`.execute(db);
  await db.schema.alterTable('file_uploads').dropColumn('objects_removed_at').dropColumn('retention_seconds').execute();
  await sql`alter table file_uploads drop constraint file_uploads_status_check`.execute(db);
  await sql`alter table file_uploads add constraint file_uploads_status_check check (status in ('pending', 'completed', 'failed'))`.execute(db);
}
