/** Where this repository is, for tests that run what its build and scripts made. */
import { fileURLToPath } from 'node:url';

/** The repository's root directory (no trailing slash). */
export const REPOSITORY_ROOT = fileURLToPath(new URL('../../../', import.meta.url)).replace(
  /\/$/,
  '',
);
