// The one list of job kinds, in document order. Everything keyed by kind derives from it: the kind
// names (`jobKinds`, `JobKind`), the workflow types, the id prefixes, the list names, the stored
// params' schemas (shared/job-params.ts), the records (shared/job-record.ts), the gateway's
// endpoints, create checks and document (api/routes/jobs/kinds.ts), the worker's provider requests
// (activities/jobs/io.ts) and the jobs.kind check (db/migrate.ts). A new kind: its folder
// (kinds/<kind>/: descriptor, models, local rendering) and its descriptor here; `npm run kinds:list`
// then writes the models list (./models.ts, generated from this file's imports). Its jobs' workflow
// type derives from its name, and the one generation workflow runs them (workflows/kinds.ts):
// docs/contributing.md, "Adding a job kind".
import { uploadParamsOf, type KindDescriptor } from './define.js';
import type { JobKindName } from '../shared/job-model.js';
import type { GenerationControl } from '../shared/generation-controls.js';
import { imageKind } from './image/descriptor.js';
import { videoKind } from './video/descriptor.js';
import { replaceActorKind } from './replace-actor/descriptor.js';
import { talkingActorKind } from './talking-actor/descriptor.js';

export const kindDescriptors = [imageKind, videoKind, replaceActorKind, talkingActorKind] as const satisfies readonly { kind: JobKindName }[];

type Kinds = (typeof kindDescriptors)[number];
export type JobKind = Kinds['kind'];
// Every kind of the models' list (./models.ts, shared/job-model.ts's names) has its descriptor here.
const everyKindDescribed: [Exclude<JobKindName, JobKind>] extends [never] ? true : never = true;
void everyKindDescribed;
/** The descriptor of one kind, with its own schemas' types. */
export type KindOf<K extends JobKind> = Extract<Kinds, { kind: K }>;

export const jobKinds = kindDescriptors.map((d) => d.kind) as unknown as readonly [JobKind, ...JobKind[]];

const byKind = new Map<string, KindDescriptor>(kindDescriptors.map((d) => [d.kind, d]));

/** A kind's descriptor (loosely typed: the caller holds a kind name, not its params). */
export function kindOf(kind: JobKind): KindDescriptor {
  return byKind.get(kind)!;
}

/** Every params key that holds file upload ids, over all kinds (db/repos/uploads.ts keeps those uploads while the job runs). */
export const uploadParamKeys: readonly string[] = [...new Set(kindDescriptors.flatMap((d) => uploadParamsOf(d)))];

/** The generation controls each kind's create body takes (its descriptor's `controls`). */
export const kindControls = Object.fromEntries(kindDescriptors.map((d) => [d.kind, d.controls])) as Record<JobKind, readonly GenerationControl[]>;

/** Workflow type per job kind (each runs the generation workflow, workflows/kinds.ts). */
export const workflowTypes = Object.fromEntries(kindDescriptors.map((d) => [d.kind, d.workflowType])) as { [K in JobKind]: KindOf<K>['workflowType'] };

export type { Checked, InputParam, KindDescriptor, KindRequest, RequestContext, RouteCheck } from './define.js';
export { imageKind, videoKind, replaceActorKind, talkingActorKind };
