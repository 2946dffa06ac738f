import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts', 'src/conformance/index.ts'],
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  // TypeBox's ESM build is hundreds of small modules; bundled, `yonder` starts ~60 ms sooner.
  noExternal: ['@sinclair/typebox'],
});
