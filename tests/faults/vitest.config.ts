import { defineConfig } from 'vitest/config';

/** `make test-faults`: the fault suite (tests/faults), one file at a time, with its own report. */
export default defineConfig({
  test: {
    include: ['tests/faults/**/*.test.ts'],
    testTimeout: 240_000,
    // A whole stack of service processes starts in a hook (abandon.test.ts): each may take up to
    // 180 s to answer on a loaded host (harness.ts, START_WITHIN_MS).
    hookTimeout: 300_000,
    globalSetup: ['packages/testkit/src/global-setup.ts'],
    pool: 'forks',
    fileParallelism: false,
    reporters: ['default', ['json', { outputFile: '.vitest-faults-report.json' }]],
  },
});
