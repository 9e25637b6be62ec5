// Metadata and tags on every job and pipeline (docs/api/metadata-and-tags.md).
//
// `metadata` (jsonb, string values) and `tags` (text[]) on `jobs` and `pipelines`, as the create gave
// them, '{}' when it gave none. Both columns have a constant default, so adding them rewrites no
// row (PostgreSQL 11+ stores the default in the catalog): the migration is instant at any size.
//
// The list filters (`?tag=`, `?metadata[k]=v`) are served by `job_labels` / `pipeline_labels`: one
// row per tag (`t:<tag>`) and per metadata pair (`m:<key>=<value>`, a key never holds `=`), keyed
// (workspace_id, label, created_at, id). A list filtered by a label walks that key backwards from
// its cursor and fetches each job by primary key, so a page reads about `limit` index entries
// whatever the workspace or the table holds, like the 0008 list indexes. The rows are written in
// the create's own statement (a job) or transaction (a pipeline), never updated; a job or pipeline
// removed by hand takes its rows with it (the second index, by id, finds them).
//
// The app role may read and insert them (db/roles.ts appAppendOnlyTables).
import { sql, type Kysely } from 'kysely';

const subjects = [
  { table: 'jobs', labels: 'job_labels', id: 'job_id' },
  { table: 'pipelines', labels: 'pipeline_labels', id: 'pipeline_id' },
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const s of subjects) {
    await sql`alter table ${sql.table(s.table)}
      add column metadata jsonb not null default '{}',
      add column tags text[] not null default '{}'`.execute(db);
    await sql`
      create table ${sql.table(s.labels)} (
        workspace_id text not null,
        label text not null,
        created_at timestamptz not null,
        ${sql.id(s.id)} text not null references ${sql.table(s.table)} (id) on delete cascade,
        primary key (workspace_id, label, created_at, ${sql.id(s.id)})
      )`.execute(db);
    await sql`create index ${sql.id(`${s.labels}_${s.id}_idx`)} on ${sql.table(s.labels)} (${sql.id(s.id)})`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const s of subjects) {
    await sql`drop table if exists ${sql.table(s.labels)}`.execute(db);
    await sql`alter table ${sql.table(s.table)} drop column if exists metadata, drop column if exists tags`.execute(db);
  }
}
