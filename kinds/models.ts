// Generated from the kinds' list (kinds/index.ts) by `npm run kinds:list`
// (scripts/generate/kind-models-list.ts): do not edit.
// Each job kind's catalog models, by kind, in the list's order: the catalog reads its entries from
// here (shared/catalog.ts) and the kind names derive from it (shared/job-model.ts). Pure data: the
// workflow bundle holds it.
import { entries as image } from './image/models.js';
import { entries as video } from './video/models.js';
import { entries as replaceActor } from './replace-actor/models.js';
import { entries as talkingActor } from './talking-actor/models.js';

export const kindModels = {
  image,
  video,
  replace_actor: replaceActor,
  talking_actor: talkingActor,
} as const;

type KindName = keyof typeof kindModels;
/** The job kind names, in document order. */
export const jobKindNames = Object.keys(kindModels) as KindName[] as [KindName, ...KindName[]];
