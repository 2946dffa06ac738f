import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { storeConformance } from '@yonder/core/conformance';
import { it } from 'vitest';
import { createFsStore } from './index.js';

storeConformance(it, () =>
  createFsStore({ location: mkdtempSync(join(tmpdir(), 'yonder-store-')) }),
);
