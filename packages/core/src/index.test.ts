/** The built root of @yonder/core stays small: its names, counted at run time and in its type declarations, and which subpath holds the rest. */
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const dist = (file: string): string => fileURLToPath(new URL(`../dist/${file}`, import.meta.url));

const ENTRIES = [
  'index.d.ts',
  'backend-kit/index.d.ts',
  'testing/index.d.ts',
  'conformance/index.d.ts',
];
let program: ts.Program | undefined;

/** Every name a built entry's declarations export, types included, sorted. */
function declaredNames(entry: string): string[] {
  program ??= ts.createProgram(ENTRIES.map(dist), {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    noEmit: true,
    // Only the names are wanted: no standard library, no @types.
    noLib: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(dist(entry));
  const module = source && checker.getSymbolAtLocation(source);
  if (!module) throw new Error(`${dist(entry)} has no module symbol: build @yonder/core first`);
  return checker
    .getExportsOfModule(module)
    .map((symbol) => symbol.name)
    .sort();
}

/** What the root exports, by kind: the contracts, errors, JobManager, registry, local pieces. */
const ROOT = {
  contracts: [
    'AbsentObservationV1',
    'BackendCapabilitiesV1',
    'BackendContextV1',
    'BackendJobV1',
    'BackendV1',
    'CancelOutcomeV1',
    'FailureKind',
    'FoundObservationV1',
    'JobRecord',
    'JobSpec',
    'JobState',
    'JsonObject',
    'JsonValue',
    'LeaseV1',
    'ListJobsOptionsV1',
    'ListJobsResultV1',
    'LogChunkV1',
    'ObservationV1',
    'PluginFactoryV1',
    'PluginV1',
    'ProbeReportV1',
    'Profile',
    'QueryFailedObservationV1',
    'RESOURCE_NAMES',
    'ReadLogOptionsV1',
    'ResourceName',
    'Resources',
    'RunOptionsV1',
    'RunResultV1',
    'StoreFactoryV1',
    'StoreProblemV1',
    'StoreV1',
    'SubmitRequestV1',
    'SubmitResultV1',
    'Transition',
    'TransportDescriptionV1',
    'TransportFactoryV1',
    'TransportV1',
  ],
  errors: [
    'CorruptRecordError',
    'NoSuchPluginError',
    'UnsupportedVersionError',
    'UntrustedPathError',
    'ValidationError',
    'ValidationIssue',
    'YonderError',
    'YonderErrorCode',
    'getErrorMessage',
    'toYonderError',
  ],
  manager: [
    'JobEvent',
    'JobManager',
    'JobManagerOptions',
    'JobWatch',
    'ListOptions',
    'RefreshOptions',
    'WaitOptions',
    'WatchJobsOptions',
  ],
  registry: ['PluginOrigin', 'Registry', 'RegistryEntries', 'createRegistry', 'registerPlugin'],
  local: [
    'LocalBackendOptions',
    'WorkstationBackendOptions',
    'createLocalBackend',
    'createLocalTransport',
    'createWorkstationBackend',
  ],
  other: ['Static', 'TSchema', 'Type', 'VERSION'],
};

/** Never exported from any entry: only the JobManager changes a job's state. */
const INTERNALS = ['applyObservation', 'transition', 'DEFAULT_STATE_POLICY', 'TransitionFields'];

describe('the root of @yonder/core', () => {
  it('exports at most 70 values at run time', async () => {
    const module: Record<string, unknown> = await import(dist('index.js'));
    expect(Object.keys(module).length).toBeLessThanOrEqual(70);
  });

  it('exports at most 70 names, types included: exactly the contracts, errors, manager, registry and local pieces', () => {
    const names = declaredNames('index.d.ts');
    expect(names.length).toBeLessThanOrEqual(70);
    expect(names).toEqual(Object.values(ROOT).flat().sort());
  });

  it('leaves the helpers to backend-kit and the memory store to testing', () => {
    const kit = declaredNames('backend-kit/index.d.ts');
    for (const name of ['shQuote', 'shJoin', 'readRemoteLog', 'cachedProbe', 'BoundedBuffer'])
      expect(kit).toContain(name);
    expect(declaredNames('testing/index.d.ts')).toEqual(['assertBackend', 'createMemoryStore']);
    const root = declaredNames('index.d.ts');
    for (const name of [...kit, 'createMemoryStore', 'assertBackend'])
      expect(root).not.toContain(name);
  });

  it('exports no state-changing internals from any entry', () => {
    for (const entry of ENTRIES) {
      const names = declaredNames(entry);
      for (const internal of INTERNALS) expect(names, entry).not.toContain(internal);
    }
  });
});
