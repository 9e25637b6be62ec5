// Pipelines as batch items (docs/api/batches.md#pipeline-items): an item of kind `pipeline` runs a
// pipeline of its steps, made when the item starts.
// - `batch_items.pipeline_id`: the item's pipeline (one per item: a retry of the item resumes it);
//   null for a job item. A started pipeline item's status is its pipeline's.
// - `pipelines.batch_id`: the batch whose item made the pipeline; null for one created through
//   POST /v1/pipelines. The workspace's limit on pipelines in flight (PIPELINE_MAX_ACTIVE) counts the
//   latter only: a batch bounds its own (its start rate, its item count).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('batch_items').addColumn('pipeline_id', 'text').execute();
  await db.schema.alterTable('pipelines').addColumn('batch_id', 'text').execute();
  await sql`create index pipelines_batch_idx on pipelines (batch_id) where batch_id is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists pipelines_batch_idx`.execute(db);
  await db.schema.alterTable('pipelines').dropColumn('batch_id').execute();
  await db.schema.alterTable('batch_items').dropColumn('pipeline_id').execute();
}
