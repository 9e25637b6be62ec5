// The label index tables (0115_labels): one row per tag (`t:<tag>`) or metadata pair
// (`m:<key>=<value>`) of a job or pipeline, keyed (workspace_id, label, created_at, id) so a list
// filtered by a label walks its index newest first, a page reading about `limit` entries whatever
// the tables hold. Written in the transaction of the create; a row is never updated.
interface JobLabelTable {
  workspace_id: string;
  label: string;
  /** The job's created_at (never changed by the service). */
  created_at: Date;
  job_id: string;
}

interface PipelineLabelTable {
  workspace_id: string;
  label: string;
  created_at: Date;
  pipeline_id: string;
}

/** This file's tables, as the database interface (db/schema.ts `DB`) lists them. */
export interface LabelTables {
  job_labels: JobLabelTable;
  pipeline_labels: PipelineLabelTable;
}
