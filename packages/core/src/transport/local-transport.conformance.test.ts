import { it } from 'vitest';
import { transportConformance } from '../conformance/index.js';
import { createLocalTransport } from './local-transport.js';

transportConformance(it, () => createLocalTransport());
