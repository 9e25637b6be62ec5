// Lint: typescript-eslint's recommended rules, plus the workflow sandbox rules of the Temporal
// samples (no Node built-ins, no floating promises in workflow code).
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      'no-restricted-imports': ['error', { patterns: ['node:*', 'fs', 'path', 'crypto', 'http', 'https', 'net', 'child_process', '../activities/*', '../db/*', '../api/*'] }],
    },
  },
);
