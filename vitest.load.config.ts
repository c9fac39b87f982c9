import { configDefaults, defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * `npm run test:load`: the suites of test/load, long-running (real CLI processes, many servers), with
 * the base settings and deadlines for a loaded 2-core machine (each test still waits for conditions).
 */
export default defineConfig({
  test: {
    ...base.test,
    include: ['test/load/**/*.test.ts'],
    exclude: [...configDefaults.exclude],
    // One file at a time: each is a load of its own (many processes, 1,000s of calls).
    maxWorkers: 1,
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
