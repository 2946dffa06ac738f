import { defineConfig } from 'vitest/config';
import { packageVersionPlugin } from './tools/vitest/package-version-plugin.js';

/** Tests that stop shared services (slurmctld, slurmdbd, sshd): run alone, one file at a time. */
export default defineConfig({
  plugins: [packageVersionPlugin()],
  test: {
    include: ['packages/*/src/**/*.disruptive.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
