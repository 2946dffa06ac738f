import { resolve } from 'node:path';
import type { BackendV1, JsonValue, Profile, TSchema } from '@yonder/core';
import { YonderError } from '@yonder/core';
import { chooseTransport, isReservedKey, normaliseProfile } from '@yonder/core/backend-kit';
import { integerOption, numberOption, parse } from '../../args.js';
import type { Command, CommandContext } from '../../command.js';
import { issueText } from '../../error-text.js';
import { envelope } from '../../output.js';
import { profileJsonSchema } from '../../profile-schema.js';
import { UsageError } from '../../usage-error.js';
import { defaultSshTransport } from './default-transport.js';

const HELP = `Usage:
  yonder profile add NAME --backend B [--host H] [--workdir D] [--local-root P --remote-root P]
                 [--pending-timeout S] [--poll-seconds S] [--cancel-grace S] [--set KEY=VALUE]...
                 [--transport T] [--transport-set KEY=VALUE]...
                 [--ssh-config FILE] [--accept-new-host-keys] [--max-channels N]
                 [--control-persist S] [--force] [--json]
  yonder profile list [--json]
  yonder profile show NAME [--json]
  yonder profile remove NAME [--json]
  yonder profile check NAME [--json]     validate, show the route, reach the target and report what is there
  yonder profile schema                  the JSON Schema of a profile, with every installed backend's options

--host is a host name or a Host alias of your ssh config (~/.ssh/config, or --ssh-config FILE);
keys, ports, users and ProxyJump come from there. Host keys are checked against known_hosts:
an unknown key is refused unless --accept-new-host-keys (then it is recorded); a changed key
always is. --max-channels bounds concurrent SSH channels (sshd's MaxSessions is 10).

--transport names the transport that reaches the target. For a host reached over ssh: openssh
(the system ssh over one kept master connection: everything your ssh does — 2FA, passwords,
Kerberos, certificates, ProxyCommand, Match exec — works; a host that asks a person needs
"yonder connect NAME" first) or ssh2 (in-process, public keys and ssh-agent only). The default
is openssh when an OpenSSH client 8.0 or later is on PATH, else ssh2; profiles saved before
keep the ssh2 transport (id ssh). Without --host: local. --transport-set sets one of its
options. --ssh-config (ssh -F), --accept-new-host-keys and --max-channels set the options
config, acceptNewHostKeys and maxChannels of either; --control-persist S the openssh
transport's controlPersistSeconds (how long the master stays up after its last command, 600).

--set sets a backend option (KEY may be a dotted path); values are read as JSON when the
backend's schema wants a number, boolean, list or object; --transport-set likewise for the
transport's schema. --force replaces an existing profile.
`;

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

async function add(argv: string[], { io, runtime }: CommandContext): Promise<number> {
  const { values, positionals } = parse(
    argv,
    {
      backend: { type: 'string' },
      host: { type: 'string' },
      workdir: { type: 'string' },
      'local-root': { type: 'string' },
      'remote-root': { type: 'string' },
      'pending-timeout': { type: 'string' },
      'poll-seconds': { type: 'string' },
      'cancel-grace': { type: 'string' },
      transport: { type: 'string' },
      'transport-set': { type: 'string', multiple: true },
      'ssh-config': { type: 'string' },
      'accept-new-host-keys': { type: 'boolean' },
      'max-channels': { type: 'string' },
      'control-persist': { type: 'string' },
      set: { type: 'string', multiple: true },
      force: { type: 'boolean' },
      json: { type: 'boolean' },
    },
    'profile add',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length !== 1)
    throw new UsageError('Name the profile: yonder profile add NAME --backend B');
  if (values.backend === undefined)
    throw new UsageError('--backend is required (local, ssh, slurm, command, or a plugin’s id).');
  const name = positionals[0] as string;
  const { manager, ensureBackend, ensureTransport } = runtime();
  if (!values.force && (await manager.store.getProfile(name))) {
    throw new YonderError(
      'E_PROFILE_EXISTS',
      `A profile named "${name}" exists; add --force to replace it.`,
    );
  }
  const profile: Profile = { name, backend: String(values.backend) };
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
  if (values.transport !== undefined) profile.transport = String(values.transport);
  const sets = (values.set as string[] | undefined) ?? [];
  const transportSets = (values['transport-set'] as string[] | undefined) ?? [];
  // The schemas say how to read the values; validation below reports what cannot be found.
  let backend: BackendV1 | undefined;
  if (sets.length > 0 || transportSets.length > 0 || profile.host !== undefined)
    backend = await ensureBackend(profile.backend).catch(() => undefined);
  // A host its backend reaches over ssh, and no transport named: the system ssh where it will do.
  if (
    profile.transport === undefined &&
    profile.host !== undefined &&
    backend?.capabilities.transport === 'ssh'
  )
    profile.transport = defaultSshTransport(io.env);
  const options = readSets(sets, '--set', backend?.optionsSchema);
  if (options) profile.options = options;
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
    profile.transportOptions = { ...transportOptions, ...ssh };
  const saved = await manager.saveProfile(profile);
  io.stdout(values.json ? envelope(saved) : `Saved profile "${saved.name}" (${saved.backend}).\n`);
  return 0;
}

function describe(profile: Profile): string {
  const lines = [`Name:      ${profile.name}`, `Backend:   ${profile.backend}`];
  if (profile.host) lines.push(`Host:      ${profile.host}`);
  if (profile.transport) lines.push(`Transport: ${profile.transport}`);
  for (const [key, value] of Object.entries(profile.transportOptions ?? {}))
    lines.push(`Transport option: ${key} = ${JSON.stringify(value)}`);
  if (profile.workdir) lines.push(`Workdir:   ${profile.workdir}`);
  if (profile.localRoot) lines.push(`Roots:     ${profile.localRoot} -> ${profile.remoteRoot}`);
  if (profile.pendingTimeoutSeconds)
    lines.push(`Pending timeout: ${profile.pendingTimeoutSeconds}s`);
  if (profile.pollSeconds) lines.push(`Poll:      ${profile.pollSeconds}s`);
  if (profile.cancelGraceSeconds !== undefined)
    lines.push(`Cancel grace: ${profile.cancelGraceSeconds}s`);
  for (const [key, value] of Object.entries(profile.options ?? {}))
    lines.push(`Option:    ${key} = ${JSON.stringify(value)}`);
  return `${lines.join('\n')}\n`;
}

export const run: Command = async (argv, context) => {
  const [sub, ...rest] = argv;
  const { io, runtime } = context;
  if (sub === undefined || sub === '--help' || sub === '-h') {
    (sub === undefined ? io.stderr : io.stdout)(HELP);
    return sub === undefined ? 2 : 0;
  }
  if (sub === 'add') return add(rest, context);
  const { values, positionals } = parse(rest, { json: { type: 'boolean' } }, `profile ${sub}`);
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  const json = Boolean(values.json);
  if (sub === 'schema') {
    const { registry, loadAll } = runtime();
    await loadAll();
    io.stdout(`${JSON.stringify(profileJsonSchema(registry), null, 2)}\n`);
    return 0;
  }
  if (sub === 'list') {
    if (positionals.length > 0) throw new UsageError(`Unexpected argument "${positionals[0]}".`);
    const listed = await runtime().manager.store.listProfiles();
    const { problems } = listed;
    const profiles = listed.profiles.map(normaliseProfile);
    for (const problem of problems)
      io.stderr(`yonder: warning: ${problem.message} (${problem.location})\n`);
    if (!profiles.some((p) => p.name.toLowerCase() === 'local'))
      profiles.unshift({ name: 'local', backend: 'local' });
    if (json) io.stdout(envelope(profiles));
    else
      for (const p of profiles)
        io.stdout(`${p.name}\t${p.backend}${p.host ? `\t${p.host}` : ''}\n`);
    return 0;
  }
  if (positionals.length !== 1)
    throw new UsageError(`Name one profile: yonder profile ${sub} NAME`);
  const name = positionals[0] as string;
  const { manager } = runtime();
  if (sub === 'show') {
    const profile = await manager.profile(name);
    io.stdout(json ? envelope(profile) : describe(profile));
    return 0;
  }
  if (sub === 'remove') {
    const removed = await manager.store.removeProfile(name);
    if (!removed) throw new YonderError('E_NO_SUCH_PROFILE', `No profile named "${name}".`);
    io.stdout(json ? envelope({ removed: name }) : `Removed profile "${name}".\n`);
    return 0;
  }
  if (sub === 'check') {
    const { profile, issues, probe, route } = await manager.checkProfile(name);
    const ok = issues.length === 0 && probe !== null && probe.ok;
    if (json) {
      io.stdout(
        envelope({
          profile,
          ok,
          issues,
          route,
          facts: probe?.facts ?? {},
          problems: probe?.problems ?? [],
        }),
      );
    } else {
      io.stdout(describe(profile));
      for (const issue of issues) io.stdout(`Invalid:   ${issueText(issue)}\n`);
      for (const [key, value] of Object.entries(route ?? {}))
        io.stdout(
          `Route:     ${key} = ${typeof value === 'string' ? value : JSON.stringify(value)}\n`,
        );
      for (const [key, value] of Object.entries(probe?.facts ?? {}))
        io.stdout(`Found:     ${key} = ${JSON.stringify(value)}\n`);
      for (const problem of probe?.problems ?? []) io.stdout(`Problem:   ${problem}\n`);
      io.stdout(ok ? 'Check: ok\n' : 'Check: FAILED\n');
    }
    return ok ? 0 : 1;
  }
  throw new UsageError(
    `Unknown profile command "${sub}". Use add, list, show, remove, check or schema.`,
  );
};
