/**
 * The repository's one vitest config: four projects, chosen by file name.
 *
 * - `unit`: `*.test.ts` of the packages, examples and docs; in-process or this machine's own
 *   tools only (sh, ssh -G, ssh-keygen). Seconds: `pnpm test:unit`.
 * - `integration`: `*.integration.test.ts`: the built CLI run as a user runs it, packaging
 *   (pnpm pack, npm install), and the shared services (Slurm, sshd, task-spooler).
 * - `reliability`: the suite in `packages/reliability` (concurrency, crashes, faults, hostile
 *   input, pid reuse, secrets); as root, with the services up.
 * - `disruptive`: `*.disruptive.test.ts`, which stop and restart the shared services: one
 *   file at a time, and only after every other project (`sequence.groupOrder`), so that even a
 *   plain `vitest run` never runs them beside another test.
 */
import { defineConfig } from 'vitest/config';
import { packageVersionPlugin } from './tools/vitest/package-version-plugin.js';

const IGNORED = ['**/node_modules/**', '**/dist/**', '**/.snippets/**'];
const INTEGRATION = '**/*.integration.test.ts';
const DISRUPTIVE = '**/*.disruptive.test.ts';
const RELIABILITY = 'packages/reliability/**';
const ROOTS = ['packages/*/src/**', 'examples/*/src/**', 'docs/**'];

export default defineConfig({
  plugins: [packageVersionPlugin()],
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ROOTS.map((root) => `${root}/*.test.ts`),
          exclude: [...IGNORED, INTEGRATION, DISRUPTIVE, RELIABILITY],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ROOTS.map((root) => `${root}/*.integration.test.ts`),
          exclude: [...IGNORED, DISRUPTIVE, RELIABILITY],
        },
      },
      {
        extends: true,
        test: {
          name: 'reliability',
          include: ['packages/reliability/src/**/*.test.ts'],
          exclude: [...IGNORED, INTEGRATION, DISRUPTIVE],
        },
      },
      {
        extends: true,
        test: {
          name: 'disruptive',
          include: ROOTS.map((root) => `${root}/*.disruptive.test.ts`),
          exclude: IGNORED,
          testTimeout: 300_000,
          hookTimeout: 300_000,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
