/** How tsup builds this package; VERSION is package.json's, injected here and never typed. */
import { defineConfig } from 'tsup';
import packageJson from './package.json' with { type: 'json' };

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  define: { __PACKAGE_VERSION__: JSON.stringify(packageJson.version) },
});
