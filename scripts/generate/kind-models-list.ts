// The kinds' models list (kinds/models.ts), generated from the kinds' list (kinds/index.ts): the kind
// descriptors read the whole catalog at load, so the catalog cannot read them, and it reads this
// pure list of each kind folder's `entries` (kinds/<kind>/models.ts) instead. Written from the order
// of the descriptors' imports in kinds/index.ts, read as text (the compiled list may not load while
// the two disagree), so a new kind is its folder and one line there, then `npm run kinds:list`.
// test/unit/kind-folders.test.ts fails while the file is stale.
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const kindsDir = new URL('../../../kinds/', import.meta.url);
export const kindModelsListPath = fileURLToPath(new URL('models.ts', kindsDir));

/** The kind folders in the kinds' list order: the folders of kinds/index.ts's descriptor imports. */
export function listedKindFolders(listSource = readFileSync(new URL('index.ts', kindsDir), 'utf8')): string[] {
  return [...listSource.matchAll(/^import \{ \w+ \} from '\.\/([a-z][a-z0-9-]*)\/descriptor\.js';$/gm)].map((m) => m[1]!);
}

const camel = (folder: string) => folder.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** The file's text. */
export function kindModelsListSource(folders = listedKindFolders()): string {
  if (folders.length === 0) throw new Error('kinds/index.ts imports no kinds/<kind>/descriptor.js');
  return [
    "// Generated from the kinds' list (kinds/index.ts) by `npm run kinds:list`",
    '// (scripts/generate/kind-models-list.ts): do not edit.',
    "// Each job kind's catalog models, by kind, in the list's order: the catalog reads its entries from",
    '// here (shared/catalog.ts) and the kind names derive from it (shared/job-model.ts). Pure data: the',
    '// workflow bundle holds it.',
    ...folders.map((f) => `import { entries as ${camel(f)} } from './${f}/models.js';`),
    '',
    'export const kindModels = {',
    ...folders.map((f) => (f.includes('-') ? `  ${f.replaceAll('-', '_')}: ${camel(f)},` : `  ${f},`)),
    '} as const;',
    '',
    'type KindName = keyof typeof kindModels;',
    '/** The job kind names, in document order. */',
    'export const jobKindNames = Object.keys(kindModels) as KindName[] as [KindName, ...KindName[]];',
    '',
  ].join('\n');
}

function main() {
  writeFileSync(kindModelsListPath, kindModelsListSource());
  console.log(`wrote ${kindModelsListPath}`);
}

// Runs as `node dist/scripts/generate/kind-models-list.js`; the test only imports it.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) main();
