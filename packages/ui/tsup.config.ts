/** How tsup builds this package: the server for Node (VERSION injected from package.json), and the page's script and style bundled for the browser into dist/client, so nothing is fetched from elsewhere. */
import { defineConfig } from 'tsup';
import packageJson from './package.json' with { type: 'json' };

export default defineConfig([
  {
    entry: ['src/index.ts'],
    format: ['esm'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node20',
    define: { __PACKAGE_VERSION__: JSON.stringify(packageJson.version) },
  },
  {
    entry: { app: 'src/client/app.ts', style: 'src/client/app.css' },
    outDir: 'dist/client',
    format: ['iife'],
    platform: 'browser',
    target: 'es2022',
    minify: true,
    sourcemap: false,
    dts: false,
    clean: false,
    outExtension: () => ({ js: '.js' }),
  },
]);
