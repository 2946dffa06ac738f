import { it } from 'vitest';
import { backendConformance } from '../../conformance/index.js';
import { createLocalBackend } from './local-backend.js';

backendConformance(it, () => createLocalBackend(), {
  profile: { name: 'local', backend: 'local' },
  jobTimeoutMs: 20_000,
});
