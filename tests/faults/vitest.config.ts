import { defineConfig } from 'vitest/config';

/** `make test-faults`: the fault suite (tests/faults), one file at a time, with its own report. */
export default defineConfig({
  test: {
    include: ['tests/faults/**/*.test.ts'],
    testTimeout: 240_000,
    hookTimeout: 120_000,
    globalSetup: ['packages/testkit/src/global-setup.ts'],
    pool: 'forks',
    fileParallelism: false,
    reporters: ['default', ['json', { outputFile: '.vitest-faults-report.json' }]],
  },
});
