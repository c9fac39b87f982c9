import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'spec/**/*.test.ts'],
    // test/load: suites too long for `npm test` on 2 cores (`npm run test:load`, vitest.load.config.ts).
    exclude: [...configDefaults.exclude, 'test/load/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two test files at once on 2 cores (vitest's default there is one): the tests mostly wait on the
    // processes they start, so one worker leaves a core idle.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // A worker runs its test files one after another in one module graph: src/ and the SDK load once per
    // worker, not once per file (about a third of the suite's CPU). The tests share no module state but
    // the wire check's counters (test/helpers/gateway.ts), which only grow.
    isolate: false,
    globalSetup: ['test/global-setup.ts'],
    reporters: ['default'],
  },
});
