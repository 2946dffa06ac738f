import { storeConformance } from '@yonder/core/conformance';
import { createTestDatabase, dropTestDatabase } from '@yonder/test-helpers';
import { afterAll, it } from 'vitest';
import { createPostgresStore } from './index.js';

const made: string[] = [];
afterAll(() => made.forEach(dropTestDatabase));

storeConformance(it, () => {
  const database = createTestDatabase('yonder_conformance');
  made.push(database.name);
  return createPostgresStore({ location: database.url });
});
