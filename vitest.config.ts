import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'packages/*/src/**/*.test.ts',
      'services/*/src/**/*.test.ts',
      'services/*/test/**/*.test.ts',
      'tests/**/*.test.ts',
    ],
    // The fault suite runs on its own (`make test-faults`, tests/faults/vitest.config.ts).
    exclude: ['tests/faults/**', '**/node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // testkit's (servers, run id, cleanup), then the run's migrated template database.
    globalSetup: ['packages/testkit/src/global-setup.ts', 'tests/support/template-db.ts'],
    pool: 'forks',
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});
