// The typed job model: what each kind of job stores in its `params` column (its descriptor's
// `params` schema, kinds/) beside its route, and the one discriminated union (`TypedParams`)
// every reader switches on. The gateway writes these shapes once at create time (its create bodies
// resolve defaults and references into them); the worker's activities, the workflow client and the
// job records read them back through `typedParams`.
import { z } from 'zod';
import type { JobRoute } from './job-model.js';
import type { JobKind, KindOf } from '../kinds/index.js';

/** Per kind: the parameters of a job as stored (defaults resolved, references checked). */
export type JobParamsOf<K extends JobKind> = z.infer<KindOf<K>['params']>;
/** Per kind: the params as stored, with the job's route (JobRoute) beside them. */
type StoredJobParamsOf<K extends JobKind> = JobParamsOf<K> & Pick<JobRoute, keyof JobRoute>;
/** The `params` column of any job. */
export type StoredJobParams = { [K in JobKind]: StoredJobParamsOf<K> }[JobKind];

/** A job's kind and params as one discriminated union: `switch (t.kind)` narrows `t.params`. */
type TypedParams = { [K in JobKind]: { kind: K; params: StoredJobParamsOf<K> } }[JobKind];

/**
 * The job's params typed by its kind. The column is written only by the gateway's create path from
 * these schemas, so this is a cast at the storage boundary, not a parse on every status read.
 */
export function typedParams(job: { kind: JobKind; params: StoredJobParams }): TypedParams {
  return { kind: job.kind, params: job.params } as TypedParams;
}
