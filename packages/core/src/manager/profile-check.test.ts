import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { YonderError } from '../errors/yonder-error.js';
import { createRegistry } from '../registry/registry.js';
import type { BackendV1 } from '../spec/backend/v1/backend-v1.js';
import type { TransportDescriptionV1, TransportV1 } from '../spec/transport/v1/transport-v1.js';
import { createMemoryStore } from '../store/memory-store.js';
import { createLocalTransport } from '../transport/local-transport.js';
import { JobManager } from './job-manager.js';

/** A backend whose probe only runs `true` through its transport. */
const backend: BackendV1 = {
  specificationVersion: 'v1',
  id: 'probing',
  capabilities: {
    resources: [],
    schedulerOptions: false,
    host: 'optional',
    recoverSubmit: false,
    logs: false,
    transport: 'described',
  },
  optionsSchema: Type.Object({}, { additionalProperties: false }),
  validateProfile: () => [],
  targetKey: () => 'probing',
  async probe(_profile, context) {
    const result = await context.transport.run(['true']);
    return { ok: result.exitCode === 0, facts: { reached: true }, problems: [] };
  },
  async submit() {
    throw new Error('not used');
  },
  async poll() {
    return new Map();
  },
  async cancel() {
    return new Map();
  },
  async readLog() {
    throw new Error('not used');
  },
};

function managerWith(describe: TransportV1['describe']): JobManager {
  const registry = createRegistry({
    backends: [backend],
    transports: {
      described: (): TransportV1 => ({ ...createLocalTransport(), describe }),
    },
  });
  return new JobManager({ store: createMemoryStore(), registry, stateDirectory: '/' });
}

describe('checkProfile and the transport’s own account', () => {
  it('returns what the transport describes beside the probe', async () => {
    const description: TransportDescriptionV1 = {
      facts: { route: [{ hostname: 'h', port: 22 }] },
      warnings: ['ssh config: ForwardAgent yes is ignored'],
      problems: [],
    };
    const manager = managerWith(async () => description);
    await manager.saveProfile({ name: 'p', backend: 'probing', host: 'h' });
    const check = await manager.checkProfile('p');
    expect(check.transport).toEqual({
      ...description,
      facts: { transport: 'described', ...description.facts },
    });
    expect(check.probe).toMatchObject({ ok: true, facts: { reached: true } });
  });

  it('turns a describe that throws into a problem, and still probes', async () => {
    const manager = managerWith(async () => {
      throw new YonderError('E_TRANSPORT', 'The ssh config /x does not exist.');
    });
    await manager.saveProfile({ name: 'p', backend: 'probing', host: 'h' });
    const check = await manager.checkProfile('p');
    expect(check.transport).toEqual({
      facts: { transport: 'described' },
      warnings: [],
      problems: ['The ssh config /x does not exist.'],
    });
    expect(check.probe?.ok).toBe(true);
  });

  it('names the transport in use, even one without describe', async () => {
    const manager = managerWith(undefined);
    await manager.saveProfile({ name: 'p', backend: 'probing', host: 'h' });
    expect((await manager.checkProfile('p')).transport).toEqual({
      facts: { transport: 'described' },
      warnings: [],
      problems: [],
    });
  });
});
