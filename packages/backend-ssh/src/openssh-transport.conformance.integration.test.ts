import { transportConformance } from '@yonder/core/conformance';
import { it } from 'vitest';
import { createOpensshTransport } from './openssh-transport.js';
import { opensshProfile } from './test-support/hosts.js';

transportConformance(it, () => createOpensshTransport({ profile: opensshProfile('target') }));
