import { defineConfig } from 'vitest/config';

/** Tests that stop shared services (slurmctld, slurmdbd, sshd): run alone, one file at a time. */
export default defineConfig({
  test: {
    include: ['packages/*/src/**/*.disruptive.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
