/** The transport conformance kit against a real container reached with root's podman. */
import { transportConformance } from '@yonder/core/conformance';
import { cleanupUsers } from '@yonder/test-helpers';
import { afterAll, beforeAll, it } from 'vitest';
import { createPodmanTransport } from './podman-transport.js';
import { startContainer } from './test-container.js';

let container = '';
beforeAll(() => {
  container = startContainer('conformance');
});
afterAll(() => cleanupUsers());

transportConformance(it, () =>
  createPodmanTransport({ name: 'box', backend: 'ssh', host: container, transport: 'podman' }),
);
