// Lint: typescript-eslint with type information, for the promise rules the house style asks for.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', '.built/**', 'node_modules/**', '.conformance/**', 'vitest.config.ts', 'vitest.load.config.ts', 'eslint.config.js'] },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.base],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: false }],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // Node lets a timeout that only AbortSignal.any refers to be collected, never to fire (src/util/abort.ts).
      'no-restricted-properties': [
        'error',
        { object: 'AbortSignal', property: 'any', message: 'Use anySignal (src/util/abort.ts): it keeps its sources, and so its timeouts, alive.' },
      ],
    },
  },
);
