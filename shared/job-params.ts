// The typed job model: what each kind of job stores in its `params` column, as zod schemas, and the
// one discriminated union (`TypedJob`) every reader switches on. The gateway writes these shapes once
// at create time (its create bodies resolve defaults and references into them); the worker's
// activities, the workflow client and the job records read them back through `typedParams`.
import { z } from 'zod';
import { providerNames, type JobKind } from './job-model.js';

const voiceOptions = z.object({
  speed: z.number().optional(),
  stability: z.number().optional(),
  similarity: z.number().optional(),
  style: z.number().optional(),
});

/** Per kind: the parameters of a job as stored (defaults resolved, references checked). */
export const jobParamsSchemas = {
  image: z.object({ prompt: z.string(), aspect_ratio: z.string(), count: z.number().int() }),
  video: z.object({
    prompt: z.string(),
    aspect_ratio: z.string(),
    duration: z.number(),
    resolution: z.string(),
    reference_file_ids: z.array(z.string()).optional(),
    start_frame_file_id: z.string().optional(),
    end_frame_file_id: z.string().optional(),
  }),
  replace_actor: z.object({
    prompt: z.string(),
    aspect_ratio: z.string(),
    duration: z.number(),
    resolution: z.string().optional(),
    image_file_id: z.string().optional(),
    video_file_id: z.string().optional(),
    image_url: z.string().optional(),
    video_url: z.string().optional(),
  }),
  talking_actor: z.object({
    actor_id: z.string(),
    voice_id: z.string(),
    script: z.string(),
    voice_options: voiceOptions.optional(),
    aspect_ratio: z.string(),
  }),
} as const satisfies Record<JobKind, z.ZodType>;

/** The route stored with every job (see JobRoute in job-model.ts). */
export const jobRouteSchema = z.object({
  provider: z.enum(providerNames),
  provider_model_id: z.string().optional(),
  deadline_seconds: z.number().int().positive(),
  routes: z.array(z.object({ provider: z.enum(providerNames).exclude(['local']), provider_model_id: z.string() })).optional(),
});

export type JobParamsOf<K extends JobKind> = z.infer<(typeof jobParamsSchemas)[K]>;
export type StoredJobParamsOf<K extends JobKind> = JobParamsOf<K> & z.infer<typeof jobRouteSchema>;
/** The `params` column of any job. */
export type StoredJobParams = { [K in JobKind]: StoredJobParamsOf<K> }[JobKind];

/** A job's kind and params as one discriminated union: `switch (t.kind)` narrows `t.params`. */
export type TypedParams = { [K in JobKind]: { kind: K; params: StoredJobParamsOf<K> } }[JobKind];

/**
 * The job's params typed by its kind. The column is written only by the gateway's create path from
 * these schemas, so this is a cast at the storage boundary, not a parse on every status read.
 */
export function typedParams(job: { kind: JobKind; params: StoredJobParams }): TypedParams {
  return { kind: job.kind, params: job.params } as TypedParams;
}
