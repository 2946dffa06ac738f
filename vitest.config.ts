import { defineConfig } from 'vitest/config';
import { packageVersionPlugin } from './tools/vitest/package-version-plugin.js';

export default defineConfig({
  plugins: [packageVersionPlugin()],
  test: {
    include: ['packages/*/src/**/*.test.ts', 'examples/*/src/**/*.test.ts', 'docs/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**', '**/*.disruptive.test.ts', '**/.snippets/**'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    reporters: ['default'],
  },
});
