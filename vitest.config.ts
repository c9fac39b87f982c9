import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'spec/**/*.test.ts'],
    // test/load: suites too long for `npm test` on 2 cores (`npm run test:load`, vitest.load.config.ts).
    exclude: [...configDefaults.exclude, 'test/load/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    globalSetup: ['test/global-setup.ts'],
    reporters: ['default'],
  },
});
