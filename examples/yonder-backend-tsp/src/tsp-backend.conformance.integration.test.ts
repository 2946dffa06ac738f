import { backendConformance } from '@yonder/core/conformance';
import { it } from 'vitest';
import { createTspBackend } from './tsp-backend.js';

backendConformance(it, () => createTspBackend(), {
  profile: {
    name: 'q',
    backend: 'tsp',
    options: { socket: `/tmp/yonder-tsp-conformance-${process.pid}.sock`, slots: 4 },
  },
});
