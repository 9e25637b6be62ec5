// Browser sessions of the customer console (docs/api/console.md). A session stands for one API key:
// the browser holds a random session id in an httpOnly cookie, Postgres holds its SHA-256 with the
// key it stands for and when it ends. Revoking the key ends its sessions (the gateway checks the
// key, through its key cache and listener, on every request); deleting the key deletes them.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('console_sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('api_key_id', 'text', (c) => c.notNull().references('api_keys.id').onDelete('cascade'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute();
  // A key's sessions (the cascade of a key's deletion, the sign-in's sweep of its expired ones).
  await db.schema.createIndex('console_sessions_api_key_id').on('console_sessions').column('api_key_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('console_sessions').execute();
}
