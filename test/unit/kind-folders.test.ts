// A job kind is one folder: kinds/<kind>/ holds its descriptor, its catalog models and
// its local rendering under the same file names for every kind, the list (kinds/index.ts) and the
// models list generated from it (kinds/models.ts) import each folder's files, and every catalog model
// lives in the folder of its kind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jobKinds } from '../../kinds/index.js';
import { catalog } from '../../shared/catalog.js';
import { renderModulePath, type KindRenderModule } from '../../activities/providers/local/kind-renderer.js';
import { kindModelsListPath, kindModelsListSource, listedKindFolders } from '../../scripts/generate/kind-models-list.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const folderOf = (kind: string) => kind.replaceAll('_', '-');

/** The catalog entries a kind's folder declares: the `entries` of its models.ts (which holds its other models*.ts files' too). */
async function entriesIn(folder: string): Promise<{ model: string; kind: string }[]> {
  const module = (await import(new URL(`../../kinds/${folder}/models.js`, import.meta.url).href)) as {
    entries?: Record<string, { model?: unknown; kind?: unknown }>;
  };
  assert.ok(module.entries, `kinds/${folder}/models.ts exports its entries`);
  const found = Object.values(module.entries).map((e) => ({ model: String(e.model), kind: String(e.kind) }));
  // Every entry map a models*.ts file of the folder exports is among them.
  for (const file of readdirSync(join(root, 'kinds', folder)).filter((f) => /^models.+\.ts$/.test(f))) {
    const other = (await import(new URL(`../../kinds/${folder}/${file.replace(/\.ts$/, '.js')}`, import.meta.url).href)) as Record<string, unknown>;
    for (const value of Object.values(other)) {
      if (!value || typeof value !== 'object' || Array.isArray(value)) continue;
      for (const model of Object.keys(value)) assert.ok(Object.hasOwn(module.entries, model), `kinds/${folder}/${file}: ${model} is in its models.ts entries`);
    }
  }
  return found;
}

test('the models list is the one generated from the kinds list (npm run kinds:list)', () => {
  assert.deepEqual(listedKindFolders(), jobKinds.map(folderOf), "kinds/index.ts's descriptor imports are the kinds, in order");
  assert.equal(readFileSync(kindModelsListPath, 'utf8'), kindModelsListSource(), 'kinds/models.ts is stale: npm run kinds:list');
});

test('each kind of the list is a folder with its descriptor and models, and each folder is in the list', () => {
  const folders = readdirSync(join(root, 'kinds')).filter((f) => statSync(join(root, 'kinds', f)).isDirectory());
  assert.deepEqual([...folders].sort(), jobKinds.map(folderOf).sort(), 'the kind folders are the list');
  const list = readFileSync(join(root, 'kinds/index.ts'), 'utf8');
  const models = readFileSync(join(root, 'kinds/models.ts'), 'utf8');
  for (const kind of jobKinds) {
    for (const file of ['descriptor.ts', 'models.ts', 'render.ts'])
      assert.ok(existsSync(join(root, 'kinds', folderOf(kind), file)), `kinds/${folderOf(kind)}/${file}`);
    assert.match(list, new RegExp(`from './${folderOf(kind)}/descriptor.js'`));
    assert.match(models, new RegExp(`from './${folderOf(kind)}/models.js'`));
    assert.match(readFileSync(join(root, 'kinds', folderOf(kind), 'descriptor.ts'), 'utf8'), new RegExp(`kind: '${kind}'`));
  }
});

test('every catalog model is declared in the folder of its kind, and nowhere else', async () => {
  const declared = new Map<string, string>();
  for (const kind of jobKinds) {
    for (const e of await entriesIn(folderOf(kind))) {
      assert.equal(e.kind, kind, `${e.model} is a ${e.kind} model, declared in kinds/${folderOf(kind)}/`);
      assert.ok(!declared.has(e.model), `${e.model} declared once`);
      declared.set(e.model, e.kind);
    }
  }
  assert.deepEqual([...declared.keys()].sort(), Object.keys(catalog).sort(), 'the catalog is the kind folders’ models');
});

test("each kind's render.ts exports the local renderer's render", async () => {
  for (const kind of jobKinds) {
    const module = (await import(
      new URL(renderModulePath(kind), new URL('../../activities/providers/local/kind-renderer.js', import.meta.url)).href
    )) as Partial<KindRenderModule>;
    assert.equal(typeof module.render, 'function', `kinds/${folderOf(kind)}/render.ts exports render`);
  }
});
