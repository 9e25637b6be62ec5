// Lint: typescript-eslint's recommended rules, plus the workflow sandbox rules of the Temporal
// samples (no Node built-ins, no floating promises in workflow code).
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'client/dist/**', 'node_modules/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    ignores: ['workflows/client.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      // Workflow code sees activities by type only; the one runtime import allowed from activities/
      // is the pure list of failure types.
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*', 'fs', 'path', 'crypto', 'http', 'https', 'net', 'child_process'], message: 'workflow code runs in a sandbox without Node built-ins' },
            { group: ['../activities/*', '!../activities/errors.js', '../db/*', '../api/*', '../worker/*'], allowTypeImports: true, message: 'workflows import activities and other layers by type only' },
          ],
        },
      ],
    },
  },
);
