// Each job kind's catalog models, by kind, in document order: the one list the catalog reads its
// entries from (shared/catalog.ts) and the kind names derive from (shared/job-model.ts). It sits apart
// from the kinds' list (./index.ts) because the descriptors read the whole catalog (second routes
// included), so the catalog cannot read the descriptors without a circle. Pure data: the workflow
// bundle holds it.
import { imageEntries } from './image/models.js';
import { videoEntries } from './video/models.js';
import { transcribedVideoEntries } from './video/models-transcribed.js';
import { replaceActorEntries } from './replace-actor/models.js';
import { talkingActorEntries } from './talking-actor/models.js';

export const kindModels = {
  image: imageEntries,
  video: { ...videoEntries, ...transcribedVideoEntries },
  replace_actor: replaceActorEntries,
  talking_actor: talkingActorEntries,
} as const;

type KindName = keyof typeof kindModels;
/** The job kind names, in document order. */
export const jobKindNames = Object.keys(kindModels) as KindName[] as [KindName, ...KindName[]];
