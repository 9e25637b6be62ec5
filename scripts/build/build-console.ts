// Bundles the customer console (console/, Preact and the TypeScript client) into dist/console:
// one minified ES module, its stylesheet and its page, served by the gateway at /console
// (api/routes/console.ts). Part of npm run build; takes well under a second.
import { build } from 'esbuild';
import { copyFile, mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const out = `${root}dist/console/`;

async function buildConsole(): Promise<{ bytes: number }> {
  await mkdir(out, { recursive: true });
  const result = await build({
    entryPoints: [`${root}console/main.tsx`],
    outfile: `${out}app.js`,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome120', 'firefox120', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  });
  await copyFile(`${root}console/index.html`, `${out}index.html`);
  await copyFile(`${root}console/app.css`, `${out}app.css`);
  return { bytes: Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildConsole();
