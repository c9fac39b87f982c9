import { configDefaults, defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * `npm run test:load`: the suites of test/load, long-running (real CLI processes, many servers), with
 * the base settings and deadlines for a loaded 2-core machine (each test still waits for conditions).
 */
export default defineConfig({
  test: { ...base.test, include: ['test/load/**/*.test.ts'], exclude: [...configDefaults.exclude], testTimeout: 120_000, hookTimeout: 120_000 },
});
