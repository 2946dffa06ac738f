/** The flags `profile add` and `profile edit` take, and the profile they make of them: common fields, backend and transport options (`--set`), and the submit's resource flags as the profile's defaults. */
import { resolve } from 'node:path';
import type { BackendV1, JsonValue, Profile, Resources, TSchema } from '@yonder/core';
import { RESOURCE_NAMES } from '@yonder/core';
import { chooseTransport, isReservedKey } from '@yonder/core/backend-kit';
import { durationOption, integerOption, numberOption, type Parsed } from '../../args.js';
import type { CommandContext } from '../../command.js';
import { CONTAINER_OPTIONS, containerFromOptions } from '../../container-options.js';
import { RESOURCE_OPTIONS, readResources, readSchedulerOptions } from '../../resource-flags.js';
import { UsageError } from '../../usage-error.js';

/** The options of `profile add` (and `profile edit`). */
export const PROFILE_FLAG_OPTIONS = {
  backend: { type: 'string' },
  host: { type: 'string' },
  workdir: { type: 'string' },
  'local-root': { type: 'string' },
  'remote-root': { type: 'string' },
  'pending-timeout': { type: 'string' },
  'poll-seconds': { type: 'string' },
  'cancel-grace': { type: 'string' },
  retention: { type: 'string' },
  transport: { type: 'string' },
  'transport-set': { type: 'string', multiple: true },
  'ssh-config': { type: 'string' },
  'accept-new-host-keys': { type: 'boolean' },
  'max-channels': { type: 'string' },
  'control-persist': { type: 'string' },
  set: { type: 'string', multiple: true },
  ...RESOURCE_OPTIONS,
  ...CONTAINER_OPTIONS,
  'unsupported-resources': { type: 'string' },
  force: { type: 'boolean' },
  json: { type: 'boolean' },
} as const;

const POLICIES = ['refuse', 'warn', 'ignore'] as const;
const COUNTS = new Set(['cpus', 'gpus', 'nodes']);

/** Read a `--set` value as the backend's schema wants it. */
function optionValue(schema: TSchema | undefined, path: string[], raw: string): JsonValue {
  let node: TSchema | undefined = schema;
  for (const key of path) node = (node?.properties as Record<string, TSchema> | undefined)?.[key];
  const type = node?.type;
  if (
    type === 'string' ||
    (node === undefined && !/^[[{]|^(true|false|null|-?\d+(\.\d+)?)$/.test(raw))
  )
    return raw;
  try {
    return JSON.parse(raw) as JsonValue;
  } catch {
    return raw;
  }
}

/** The `KEY=VALUE` items of a `--set`-like flag as an options object, or undefined when none. */
function readSets(
  items: readonly string[],
  flag: string,
  schema: TSchema | undefined,
): Record<string, JsonValue> | undefined {
  if (items.length === 0) return undefined;
  const options: Record<string, JsonValue> = {};
  for (const item of items) {
    const at = item.indexOf('=');
    if (at <= 0) throw new UsageError(`${flag} takes KEY=VALUE, got "${item}".`);
    const path = item.slice(0, at).split('.');
    if (path.some((part) => part === ''))
      throw new UsageError(`${flag}: "${item.slice(0, at)}" is not a valid key.`);
    const reserved = path.find(isReservedKey);
    if (reserved)
      throw new UsageError(`${flag} ${item.slice(0, at)}: "${reserved}" is a reserved name.`);
    setPath(options, path, optionValue(schema, path, item.slice(at + 1)));
  }
  return options;
}

function setPath(target: Record<string, JsonValue>, path: string[], value: JsonValue): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, JsonValue>;
  }
  node[path[path.length - 1] as string] = value;
}

/**
 * `--set KEY=VALUE` items whose key is a resource (`partition=debug`) and not an option of the
 * backend: defaults of the profile, as `--partition debug` would be.
 */
function resourceSets(
  items: readonly string[],
  schema: TSchema | undefined,
): { resources: Resources; rest: string[] } {
  const resources: Record<string, string | number> = {};
  const rest: string[] = [];
  const own = (schema?.properties as Record<string, unknown> | undefined) ?? {};
  for (const item of items) {
    const at = item.indexOf('=');
    const key = at > 0 ? item.slice(0, at) : '';
    if (!(RESOURCE_NAMES as readonly string[]).includes(key) || Object.hasOwn(own, key)) {
      rest.push(item);
      continue;
    }
    const value = item.slice(at + 1);
    resources[key] = COUNTS.has(key) ? (integerOption(value, `set ${key}`, 0) as number) : value;
  }
  return { resources: resources as Resources, rest };
}

/**
 * The profile the flags make of `base` (a new profile's name and backend, or the one being
 * edited): each flag given replaces that field; defaults given replace those fields of the
 * defaults, field by field; `--set` merges into the backend's options.
 */
export async function applyProfileFlags(
  base: Profile,
  values: Parsed['values'],
  { io, runtime }: Pick<CommandContext, 'io' | 'runtime'>,
): Promise<Profile> {
  const { ensureBackend, ensureTransport } = runtime();
  const profile: Profile = structuredClone(base);
  if (values.backend !== undefined) profile.backend = String(values.backend);
  if (values.host !== undefined) profile.host = String(values.host);
  if (values.workdir !== undefined) profile.workdir = String(values.workdir);
  if (values['local-root'] !== undefined)
    profile.localRoot = resolve(io.cwd, String(values['local-root']));
  if (values['remote-root'] !== undefined) profile.remoteRoot = String(values['remote-root']);
  const pending = integerOption(values['pending-timeout'], 'pending-timeout', 1);
  if (pending !== undefined) profile.pendingTimeoutSeconds = pending;
  const poll = numberOption(values['poll-seconds'], 'poll-seconds');
  if (poll !== undefined) profile.pollSeconds = poll;
  const grace = numberOption(values['cancel-grace'], 'cancel-grace');
  if (grace !== undefined) profile.cancelGraceSeconds = grace;
  if (values.retention === 'none') delete profile.retentionSeconds;
  else if (values.retention !== undefined) {
    const wrong = `--retention must be a duration from 60s to 3650d in whole seconds (30d, 2w), or "none" to keep jobs for ever; got "${String(values.retention)}".`;
    if (!/^\d+(?:\.\d+)?[smhdw]?$/.test(String(values.retention))) throw new UsageError(wrong);
    const retention = durationOption(values.retention, 'retention') as number;
    if (retention < 60_000 || retention > 315_360_000_000 || !Number.isInteger(retention / 1000))
      throw new UsageError(wrong);
    profile.retentionSeconds = retention / 1000;
  }
  if (values.transport !== undefined) profile.transport = String(values.transport);
  // The container flags replace the profile's container; --no-container removes it.
  const container = containerFromOptions(values);
  if (container === null) delete profile.container;
  else if (container) profile.container = container;
  const policy = values['unsupported-resources'];
  if (policy !== undefined) {
    if (!(POLICIES as readonly unknown[]).includes(policy))
      throw new UsageError(
        `--unsupported-resources must be refuse, warn or ignore, got "${String(policy)}".`,
      );
    profile.unsupportedResources = policy as Profile['unsupportedResources'] & string;
  }
  const sets = (values.set as string[] | undefined) ?? [];
  const transportSets = (values['transport-set'] as string[] | undefined) ?? [];
  // The schemas say how to read the values; validation reports what cannot be found.
  const backend: BackendV1 | undefined = await ensureBackend(profile.backend).catch(
    () => undefined,
  );
  const { resources: setResources, rest } = resourceSets(sets, backend?.optionsSchema);
  const options = readSets(rest, '--set', backend?.optionsSchema);
  if (options) profile.options = { ...profile.options, ...options };
  const resources = { ...setResources, ...readResources(values) };
  const schedulerOptions = readSchedulerOptions(values);
  if (Object.keys(resources).length > 0 || schedulerOptions.length > 0) {
    const defaults = { ...profile.defaults };
    if (Object.keys(resources).length > 0)
      defaults.resources = { ...defaults.resources, ...resources };
    if (schedulerOptions.length > 0) defaults.schedulerOptions = schedulerOptions;
    profile.defaults = defaults;
  }
  let transportSchema: TSchema | undefined;
  if (backend && transportSets.length > 0) {
    const transport = await ensureTransport(chooseTransport(profile, backend)).catch(
      () => undefined,
    );
    transportSchema = transport?.optionsSchema;
  }
  const transportOptions = readSets(transportSets, '--transport-set', transportSchema);
  // The ssh transport's options have flags of their own.
  const ssh: Record<string, JsonValue> = {};
  if (values['ssh-config'] !== undefined)
    ssh.config = resolve(io.cwd, String(values['ssh-config']));
  if (values['accept-new-host-keys']) ssh.acceptNewHostKeys = true;
  const channels = integerOption(values['max-channels'], 'max-channels', 1);
  if (channels !== undefined) ssh.maxChannels = channels;
  const persist = integerOption(values['control-persist'], 'control-persist', 1);
  if (persist !== undefined) ssh.controlPersistSeconds = persist;
  if (transportOptions || Object.keys(ssh).length > 0)
    profile.transportOptions = { ...profile.transportOptions, ...transportOptions, ...ssh };
  return profile;
}
