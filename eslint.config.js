// Lint: typescript-eslint's recommended rules, the workflow sandbox rules of the Temporal samples
// (no Node built-ins, no floating promises in workflow code), and the layering of the folders:
//
//   shared/     config, storage, catalog and routing, media, the guarded fetcher, the job model
//   kinds/      one folder per job kind and the list: descriptor.ts and models.ts are pure data beside
//               shared/; render.ts (its local rendering) is worker code the local renderer loads
//   providers/  one folder per provider: descriptor.ts is pure data beside shared/ (every layer may
//               import it and the list, providers/index.ts); adapter.ts, contract.ts, errors.ts and
//               the rest are worker code, loaded by activities/providers/registry.ts only
//   db/         tables, migrations, repositories (SQL only)            (imports shared/)
//   jobs/       the job domain: service, rules, transition table       (imports shared/, db/)
//   workflows/  deterministic workflow code and its client             (imports shared/, db/ and jobs/ types)
//   activities/ the worker's side-effecting steps and provider adapters
//   worker/     the worker process                                     (imports all of the above)
//   api/        the gateway process                 (imports shared/, db/, jobs/, workflows/ — never activities/ or worker/)
//   admin/      the admin CLI, an entry point       (imports all but api/; nothing imports it)
//
// An import against these arrows fails `npm run lint`.
import tseslint from 'typescript-eslint';

const layer = (name) => ({ group: [`../${name}/*`, `../../${name}/*`, `../../../${name}/*`, `../${name}/**`, `../../${name}/**`, `../../../${name}/**`] });
const ban = (names, message, extra = {}) => names.map((name) => ({ ...layer(name), message, ...extra }));
const nodeBuiltins = {
  group: ['node:*', 'fs', 'path', 'crypto', 'http', 'https', 'net', 'child_process'],
  message: 'workflow code runs in a sandbox without Node built-ins',
};

// The worker-only files of the plugin folders, from any depth: a provider folder's files but its
// descriptor.ts, and a kind folder's render.ts. The layers that run outside the worker, and the pure
// files of the folders themselves, import a provider's descriptor and a kind's descriptor only.
const depths = ['../', '../../', '../../../'];
const workerOnlyFiles = {
  group: [...depths.flatMap((d) => [`${d}providers/*/*`, `!${d}providers/*/descriptor.js`]), ...depths.map((d) => `${d}kinds/*/render.js`)],
  message:
    "a provider's adapter, contract and errors, and a kind's render.ts, are worker code (activities/providers/registry.ts and the local renderer load them): import the descriptor",
};

const restricted = (patterns) => ({ '@typescript-eslint/no-restricted-imports': ['error', { patterns }] });

export default tseslint.config(
  { ignores: ['dist/**', 'client/dist/**', 'node_modules/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Tests and scripts may hold loosely typed JSON answers.
    files: ['test/**/*.ts', 'scripts/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The console is browser code whose one way to the API is the TypeScript client.
    files: ['console/**/*.ts', 'console/**/*.tsx'],
    rules: restricted([
      ...ban(
        ['api', 'db', 'jobs', 'shared', 'worker', 'workflows', 'activities', 'admin', 'codec', 'client'],
        'the console reaches the API only through @mediagen/client',
      ),
      { group: ['node:*'], message: 'the console runs in the browser: no Node built-ins' },
    ]),
  },
  {
    files: ['shared/**/*.ts'],
    rules: restricted([
      ...ban(['api', 'worker', 'activities', 'workflows', 'db', 'jobs', 'admin'], 'shared/ is the bottom layer: it imports no other folder of the service'),
      workerOnlyFiles,
    ]),
  },
  {
    // The job kinds: pure data beside shared/ (the workflow bundle holds them).
    files: ['kinds/**/*.ts'],
    ignores: ['kinds/*/render.ts'],
    rules: restricted([
      ...ban(
        ['api', 'worker', 'activities', 'workflows', 'db', 'jobs', 'admin'],
        'kinds/ is pure data beside shared/: it imports shared/ and the provider descriptors only',
      ),
      workerOnlyFiles,
      { group: ['./render.js', './*/render.js'], message: "a kind's render.ts is worker code: the local renderer loads it" },
    ]),
  },
  {
    // A kind's local rendering: worker code beside the local renderer, which loads it by the kind's name.
    files: ['kinds/*/render.ts'],
    rules: restricted(ban(['api', 'worker', 'admin', 'workflows'], "a kind's local rendering never imports the processes that host it, nor workflow code")),
  },
  {
    // The provider list and each descriptor: pure data beside shared/ (the workflow bundle holds them).
    files: ['providers/*.ts'],
    rules: restricted([
      ...ban(
        ['api', 'worker', 'activities', 'workflows', 'db', 'jobs', 'admin'],
        'the provider list is pure data: it imports shared/ and the descriptors only',
      ),
      { group: ['./*/*.js', '!./*/descriptor.js'], message: "the provider list imports each provider's descriptor.ts, never its worker files" },
    ]),
  },
  {
    files: ['providers/*/descriptor.ts'],
    rules: restricted([
      ...ban(['api', 'worker', 'activities', 'workflows', 'db', 'jobs', 'admin'], "a provider's descriptor is pure data: it imports shared/ only"),
      { group: ['./*', '../*/*.js', '!../*/descriptor.js'], message: "a descriptor imports no provider's worker files" },
    ]),
  },
  {
    // A provider's worker side: its adapter, contract and error table, with the adapters' kit.
    files: ['providers/*/*.ts'],
    ignores: ['providers/*/descriptor.ts'],
    rules: restricted(ban(['api', 'worker', 'admin', 'workflows'], "a provider's adapter never imports the processes that host it, nor workflow code")),
  },
  {
    files: ['db/**/*.ts'],
    rules: restricted([
      ...ban(
        ['api', 'worker', 'activities', 'workflows', 'jobs', 'admin'],
        'db/ imports only shared/ (it sits below every process and the job domain: the service passes its rules in)',
      ),
      workerOnlyFiles,
    ]),
  },
  {
    files: ['jobs/**/*.ts'],
    rules: restricted([
      ...ban(
        ['api', 'worker', 'activities', 'workflows', 'admin'],
        'jobs/ imports only shared/ and db/: the processes call it, and Temporal reaches it through its port',
      ),
      workerOnlyFiles,
    ]),
  },
  {
    // The payload codec and its server sit beside shared/: every process and script may use them.
    files: ['codec/**/*.ts'],
    rules: restricted([
      ...ban(['api', 'worker', 'activities', 'workflows', 'db', 'jobs', 'admin'], 'codec/ imports only shared/: every Temporal client and worker uses it'),
      workerOnlyFiles,
    ]),
  },
  {
    files: ['api/**/*.ts'],
    rules: restricted([...ban(['activities', 'worker', 'admin'], 'the gateway never imports worker code: move what both need to shared/'), workerOnlyFiles]),
  },
  {
    files: ['activities/**/*.ts'],
    rules: restricted(ban(['api', 'worker', 'admin'], 'activities/ never import the processes that host them')),
  },
  {
    files: ['worker/**/*.ts'],
    rules: restricted(ban(['api', 'admin'], 'the worker never imports gateway code: move what both need to shared/')),
  },
  {
    // The admin CLI is an entry point of its own: it runs beside the processes, never inside one.
    files: ['admin/**/*.ts'],
    rules: restricted(ban(['api'], 'the admin CLI never imports gateway code: move what both need to shared/ or db/')),
  },
  {
    files: ['workflows/client.ts', 'workflows/visibility.ts'],
    rules: restricted([
      ...ban(['activities', 'api', 'worker', 'admin'], 'the workflow client runs in the gateway and the worker: it imports shared/ and workflows/ only'),
      workerOnlyFiles,
      // The port it implements by type; of the job domain's code, only the pure transition table.
      {
        group: ['../jobs/*', '!../jobs/transitions.js'],
        message: 'the workflow client sees jobs/ by type, but for the pure transition table',
        allowTypeImports: true,
      },
    ]),
  },
  {
    files: ['workflows/**/*.ts'],
    ignores: ['workflows/client.ts', 'workflows/visibility.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      // Workflow code sees activities through workflows/activity-types.ts and the pure modules of shared/.
      ...restricted([
        nodeBuiltins,
        ...ban(
          ['activities', 'api', 'worker', 'admin'],
          'workflow code never imports activities/ or the processes: declare what it needs in workflows/ or shared/',
        ),
        workerOnlyFiles,
        ...ban(['db'], 'workflows see db/ by type only', { allowTypeImports: true }),
        ...ban(['jobs'], 'workflows see jobs/ by type only', { allowTypeImports: true }),
      ]),
    },
  },
);
