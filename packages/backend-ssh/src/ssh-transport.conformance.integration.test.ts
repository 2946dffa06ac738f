import { transportConformance } from '@yonder/core/conformance';
import { it } from 'vitest';
import { createSshTransport } from './ssh-transport.js';
import { sshProfile } from './test-support/hosts.js';

transportConformance(it, () => createSshTransport({ profile: sshProfile('target') }));
