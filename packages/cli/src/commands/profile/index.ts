/** `yonder profile`: add, edit, list, show, remove, check and schema of the profiles in the ledger. */
import type { JsonValue, Profile } from '@yonder/core';
import { YonderError } from '@yonder/core';
import { normaliseProfile } from '@yonder/core/backend-kit';
import { durationText, parse } from '../../args.js';
import type { Command, CommandContext } from '../../command.js';
import { CONTAINER_HELP } from '../../container-options.js';
import { issueText } from '../../error-text.js';
import { envelope } from '../../output.js';
import { profileJsonSchema } from '../../profile-schema.js';
import { UsageError } from '../../usage-error.js';
import { defaultSshTransport } from './default-transport.js';
import { editProfile } from './profile-edit.js';
import { applyProfileFlags, PROFILE_FLAG_OPTIONS } from './profile-flags.js';

const HELP = `Usage:
  yonder profile add NAME --backend B [--host H] [--workdir D] [--local-root P --remote-root P]
                 [--pending-timeout S] [--poll-seconds S] [--cancel-grace S] [--retention D]
                 [--set KEY=VALUE]...
                 [--transport T] [--transport-set KEY=VALUE]...
                 [--ssh-config FILE] [--accept-new-host-keys] [--max-channels N]
                 [--time T] [--cpus N] [--memory M] [--gpus N] [--nodes N] [--partition P]
                 [--account A] [--qos Q] [--scheduler-option ARG]...
                 [--control-persist S] [--unsupported-resources refuse|warn|ignore] [--force] [--json]
                 [--container-image I --container-runtime R --bind SRC:DST[:MODE]...]
  yonder profile edit NAME [the flags of add]   change the flags given; with none, open $EDITOR
  yonder profile list [--json]
  yonder profile show NAME [--json]
  yonder profile remove NAME [--json]
  yonder profile check NAME [--json]     validate, show the route, reach the target and report
  yonder profile schema                  the JSON Schema of a profile, with every installed backend's options

--host is a host name or a Host alias of your ssh config (~/.ssh/config, or --ssh-config FILE
read alone, as ssh -F reads it);
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
transport's schema. --force replaces an existing profile (the built-in "local" too).

--time, --cpus, --memory, --gpus, --nodes, --partition, --account, --qos and --scheduler-option
(repeatable) are the profile's defaults: every submit through it gets them unless it gives
its own (field by field; the submit's scheduler options come after the profile's). --set
partition=debug (any resource name the backend has no option for) sets a default too.
--unsupported-resources says what a submit does with resources or scheduler options the
backend cannot honour: refuse the job (the default), warn and leave them out, or ignore them,
so one command line can serve a local and a Slurm profile.

--retention D (90m, 12h, 30d, 2w; 60s to 3650d) makes yonder forget the profile's finished
jobs that long after they ended, as yonder prune does: the record and the job directory on the
target. yonder list does it, at most once an hour (a thousand jobs at a time, giving the
targets 10 s); a job whose files cannot be removed (its target is down) is kept and tried
again, said in a warning. --retention none on edit keeps them for ever again, the default.

Profiles live in the ledger's profiles/ directory and are checked every time they are read:
one that was edited by hand into something invalid is refused with its file, field and fix.

The container flags set the container the profile's jobs run in by default (a job's own flags
win; its --bind follow the profile's; --no-container on edit removes it):
${CONTAINER_HELP}`;

async function add(argv: string[], { io, runtime }: CommandContext): Promise<number> {
  const { values, positionals } = parse(argv, PROFILE_FLAG_OPTIONS, 'profile add');
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length !== 1)
    throw new UsageError('Name the profile: yonder profile add NAME --backend B');
  if (values.backend === undefined)
    throw new UsageError('--backend is required (local, ssh, slurm, command, or a plugin’s id).');
  const name = positionals[0] as string;
  const { manager } = runtime();
  // The built-in local profile counts as existing: replacing it is a choice, never an accident.
  const builtIn = name.toLowerCase() === 'local';
  if (!values.force && builtIn && !(await manager.store.getProfile(name))) {
    throw new YonderError(
      'E_PROFILE_EXISTS',
      `A profile named "${name}" exists (the built-in one).`,
      {
        data: { profile: name },
      },
    );
  }
  const profile = await applyProfileFlags({ name, backend: String(values.backend) }, values, {
    io,
    runtime,
  });
  // A host its backend reaches over ssh, and no transport named: the system ssh where it will do.
  if (profile.transport === undefined && profile.host !== undefined) {
    const backend = await runtime()
      .ensureBackend(profile.backend)
      .catch(() => undefined);
    if (backend?.capabilities.transport === 'ssh') profile.transport = defaultSshTransport(io.env);
  }
  // Without --force the save is a create, decided by the store at once: of two `profile add`
  // of one name at the same time, one is refused, never both saved and one lost.
  const saved = await manager.saveProfile(profile, { create: !values.force });
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
  if (profile.retentionSeconds !== undefined)
    lines.push(`Retention: ${durationText(profile.retentionSeconds)}`);
  for (const [key, value] of Object.entries(profile.options ?? {}))
    lines.push(`Option:    ${key} = ${JSON.stringify(value)}`);
  for (const [key, value] of Object.entries(profile.defaults?.resources ?? {}))
    lines.push(`Default:   ${key} = ${JSON.stringify(value)}`);
  if (profile.defaults?.schedulerOptions?.length)
    lines.push(`Default:   scheduler options ${JSON.stringify(profile.defaults.schedulerOptions)}`);
  if (profile.unsupportedResources)
    lines.push(`Unsupported resources: ${profile.unsupportedResources}`);
  if (profile.container) lines.push(`Container: ${JSON.stringify(profile.container)}`);
  return `${lines.join('\n')}\n`;
}

/** A transport's facts for people, as `Route:` lines: one per hop of a `route` list, one per other fact. */
function transportText(facts: { readonly [key: string]: JsonValue | undefined }): string {
  let text = '';
  for (const [key, value] of Object.entries(facts)) {
    if (key === 'route' && Array.isArray(value)) {
      value.forEach((hop, index) => {
        const h = (hop ?? {}) as Record<string, JsonValue>;
        const ids = Array.isArray(h.identityFiles)
          ? ` identities ${h.identityFiles.join(', ')}`
          : '';
        const alias = h.hostKeyAlias ? ` host key alias ${String(h.hostKeyAlias)}` : '';
        text += `Route:     ${index + 1}. ${String(h.user)}@${String(h.hostname)}:${String(h.port)} (${String(h.destination)}) via ${String(h.via)}${alias}${ids}\n`;
      });
    } else if (value !== undefined)
      text += `Route:     ${key} = ${typeof value === 'string' ? value : JSON.stringify(value)}\n`;
  }
  return text;
}

export const run: Command = async (argv, context) => {
  const [sub, ...rest] = argv;
  const { io, runtime } = context;
  if (sub === undefined || sub === '--help' || sub === '-h') {
    (sub === undefined ? io.stderr : io.stdout)(HELP);
    return sub === undefined ? 2 : 0;
  }
  if (sub === 'add') return add(rest, context);
  if (sub === 'edit') return editProfile(rest, context);
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
    const { profile, issues, probe, transport } = await manager.checkProfile(name);
    const transportProblems = transport?.problems ?? [];
    const ok = issues.length === 0 && probe !== null && probe.ok && transportProblems.length === 0;
    if (json) {
      io.stdout(
        envelope({
          profile,
          ok,
          issues,
          facts: probe?.facts ?? {},
          problems: [...transportProblems, ...(probe?.problems ?? [])],
          transport: transport?.facts ?? {},
          warnings: transport?.warnings ?? [],
        }),
      );
    } else {
      io.stdout(describe(profile));
      for (const issue of issues) io.stdout(`Invalid:   ${issueText(issue)}\n`);
      io.stdout(transportText(transport?.facts ?? {}));
      for (const warning of transport?.warnings ?? []) io.stdout(`Warning:   ${warning}\n`);
      for (const [key, value] of Object.entries(probe?.facts ?? {}))
        io.stdout(`Found:     ${key} = ${JSON.stringify(value)}\n`);
      for (const problem of [...transportProblems, ...(probe?.problems ?? [])])
        io.stdout(`Problem:   ${problem}\n`);
      io.stdout(ok ? 'Check: ok\n' : 'Check: FAILED\n');
    }
    return ok ? 0 : 1;
  }
  throw new UsageError(
    `Unknown profile command "${sub}". Use add, edit, list, show, remove, check or schema.`,
  );
};
