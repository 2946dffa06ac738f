import { resolve } from 'node:path';
import type { JsonValue, Profile, TSchema } from '@yonder/core';
import { isReservedKey, YonderError } from '@yonder/core';
import { integerOption, numberOption, parse } from '../../args.js';
import type { Command, CommandContext } from '../../command.js';
import { envelope } from '../../output.js';
import { profileJsonSchema } from '../../profile-schema.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage:
  yonder profile add NAME --backend B [--host H] [--workdir D] [--local-root P --remote-root P]
                 [--pending-timeout S] [--poll-seconds S] [--cancel-grace S] [--set KEY=VALUE]...
                 [--ssh-config FILE] [--accept-new-host-keys] [--max-channels N] [--force] [--json]
  yonder profile list [--json]
  yonder profile show NAME [--json]
  yonder profile remove NAME [--json]
  yonder profile check NAME [--json]     validate, reach the target and report what is there
  yonder profile schema                  the JSON Schema of a profile, with every installed backend's options

--host is a host name or a Host alias of your ssh config (~/.ssh/config, or --ssh-config FILE);
keys, ports, users and ProxyJump come from there. Host keys are checked against known_hosts:
an unknown key is refused unless --accept-new-host-keys (then it is recorded); a changed key
always is. --max-channels bounds concurrent SSH channels (sshd's MaxSessions is 10).

--set sets a backend option (KEY may be a dotted path); values are read as JSON when the
backend's schema wants a number, boolean, list or object. --force replaces an existing profile.
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
      'ssh-config': { type: 'string' },
      'accept-new-host-keys': { type: 'boolean' },
      'max-channels': { type: 'string' },
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
  const { manager, ensureBackend } = runtime();
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
  const ssh: NonNullable<Profile['ssh']> = {};
  if (values['ssh-config'] !== undefined)
    ssh.config = resolve(io.cwd, String(values['ssh-config']));
  if (values['accept-new-host-keys']) ssh.acceptNewHostKeys = true;
  const channels = integerOption(values['max-channels'], 'max-channels', 1);
  if (channels !== undefined) ssh.maxChannels = channels;
  if (Object.keys(ssh).length > 0) profile.ssh = ssh;
  const sets = (values.set as string[] | undefined) ?? [];
  if (sets.length > 0) {
    let schema: TSchema | undefined;
    try {
      schema = (await ensureBackend(profile.backend, Boolean(profile.host))).optionsSchema;
    } catch {
      schema = undefined; // validation below reports the unknown backend
    }
    const options: Record<string, JsonValue> = {};
    for (const item of sets) {
      const at = item.indexOf('=');
      if (at <= 0) throw new UsageError(`--set takes KEY=VALUE, got "${item}".`);
      const path = item.slice(0, at).split('.');
      if (path.some((part) => part === ''))
        throw new UsageError(`--set: "${item.slice(0, at)}" is not a valid key.`);
      const reserved = path.find(isReservedKey);
      if (reserved)
        throw new UsageError(`--set ${item.slice(0, at)}: "${reserved}" is a reserved name.`);
      setPath(options, path, optionValue(schema, path, item.slice(at + 1)));
    }
    profile.options = options;
  }
  const saved = await manager.saveProfile(profile);
  io.stdout(values.json ? envelope(saved) : `Saved profile "${saved.name}" (${saved.backend}).\n`);
  return 0;
}

function describe(profile: Profile): string {
  const lines = [`Name:      ${profile.name}`, `Backend:   ${profile.backend}`];
  if (profile.host) lines.push(`Host:      ${profile.host}`);
  if (profile.ssh?.config) lines.push(`SSH config: ${profile.ssh.config}`);
  if (profile.ssh?.acceptNewHostKeys) lines.push('SSH:       accepts new host keys');
  if (profile.ssh?.maxChannels)
    lines.push(`SSH:       at most ${profile.ssh.maxChannels} channels`);
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
    const { profiles, problems } = await runtime().manager.store.listProfiles();
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
    const { profile, issues, probe } = await manager.checkProfile(name);
    const ok = issues.length === 0 && probe !== null && probe.ok;
    if (json) {
      io.stdout(
        envelope({
          profile,
          ok,
          issues,
          facts: probe?.facts ?? {},
          problems: probe?.problems ?? [],
        }),
      );
    } else {
      io.stdout(describe(profile));
      for (const issue of issues) io.stdout(`Invalid:   ${issue.path}: ${issue.message}\n`);
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
