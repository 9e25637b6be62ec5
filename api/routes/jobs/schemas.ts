// The job endpoints' own schemas: the status query and the URL answer. The kinds' create bodies,
// records and stored params are their descriptors' (kinds/).
import { z } from 'zod';

export const statusQuery = z.strictObject({
  live: z
    .enum(['true', 'false'])
    .optional()
    .describe("true: ask the job's workflow for its progress now (shared per job, cached a second) instead of the stored progress"),
});
export const urlResultSchema = z.object({ id: z.string(), url: z.string(), urls: z.array(z.string()).optional() });

export { imageJobSchema, videoJobSchema, talkingActorJobSchema, type Progress } from '../../../shared/job-record.js';
export type { ImageJobRecord, VideoJobRecord, TalkingActorJobRecord, JobRecord } from '../../../shared/job-record.js';
