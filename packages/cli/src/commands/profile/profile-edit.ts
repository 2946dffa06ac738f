/** `yonder profile edit NAME`: change the fields the flags give, or, with none, edit the profile in $VISUAL/$EDITOR; either way validated before it is saved, the old one kept if not. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Profile, ValidationError, YonderError } from '@yonder/core';
import { parseJson, trustedProgram, withFixedSearchPath } from '@yonder/core/backend-kit';
import { parse } from '../../args.js';
import type { CommandContext } from '../../command.js';
import { envelope } from '../../output.js';
import { UsageError } from '../../usage-error.js';
import { applyProfileFlags, PROFILE_FLAG_OPTIONS } from './profile-flags.js';

const { force: _force, ...EDIT_OPTIONS } = PROFILE_FLAG_OPTIONS;

const HELP = `Usage: yonder profile edit NAME [the flags of profile add except --force] [--json]

Change a profile. With flags: the fields they give change and every other field is kept
(--retention none and --no-container remove what they name). With no flags: the profile opens
as JSON in $VISUAL, else $EDITOR, else vi. Either way the result is validated before it is
saved; an invalid one is refused with its field and fix, the old profile kept (and an
editor's edit left in a file it names). "yonder profile add --help" describes every flag.
`;

/** The profile as the user left it in the editor, or an error that says where their edit is. */
function editInEditor(
  profile: Profile,
  env: NodeJS.ProcessEnv,
): { edited: unknown; file: string; dir: string } {
  const setting = env.VISUAL?.trim() || env.EDITOR?.trim() || 'vi';
  // A path with spaces in it is one word; otherwise words, as `code -w` (never through a shell).
  // Only an absolute one: a file the working directory holds must not decide how it is read.
  const command = setting.startsWith('/') && existsSync(setting) ? [setting] : setting.split(/\s+/);
  const program = command[0] as string;
  // `./vi` or `bin/vi` is whatever the directory yonder is run in holds, maybe another user's.
  if (program.includes('/') && !program.startsWith('/'))
    throw new YonderError(
      'E_EDITOR_FAILED',
      `The editor (${setting}) is named by a relative path, which is looked up in the directory yonder is run in; the profile is unchanged. Set $VISUAL or $EDITOR to its absolute path, or to a name found on PATH.`,
    );
  const searchEnv = withFixedSearchPath(process.env);
  // Judged where it is, as every program a profile names: an editor in a directory another
  // user can write is refused before it runs (E_UNTRUSTED_PATH, naming the fix).
  const found = trustedProgram(program, searchEnv.PATH ?? '', 'the editor');
  // A private directory of ours: the file is never one another user could have put in place.
  const dir = mkdtempSync(join(tmpdir(), 'yonder-edit-'));
  const file = join(dir, `${encodeURIComponent(profile.name)}.json`);
  writeFileSync(file, `${JSON.stringify(profile, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  const result = spawnSync(found ?? program, [...command.slice(1), file], {
    stdio: 'inherit',
    env: searchEnv,
  });
  if (result.error || result.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new YonderError(
      'E_EDITOR_FAILED',
      `The editor (${command.join(' ')}) ${result.error ? `could not be started: ${result.error.message}` : `exited ${result.status ?? result.signal}`}; the profile is unchanged. Set $EDITOR to the editor to use.`,
    );
  }
  const parsed = parseJson(readFileSync(file, 'utf8'));
  if (!parsed.ok)
    throw new ValidationError(
      'E_INVALID_PROFILE',
      `Profile "${profile.name}" was not saved (the old one is kept; your edit is in ${file})`,
      parsed.issues,
    );
  return { edited: parsed.value, file, dir };
}

/** `yonder profile edit NAME [flags]`. */
export async function editProfile(
  argv: string[],
  { io, runtime }: CommandContext,
): Promise<number> {
  const { values, positionals, rest } = parse(argv, EDIT_OPTIONS, 'profile edit');
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length !== 1 || rest !== null)
    throw new UsageError('Name one profile: yonder profile edit NAME [flags]');
  const name = positionals[0] as string;
  const { manager } = runtime();
  const current = await manager.profile(name);
  const flags = Object.keys(values).filter((key) => key !== 'json' && key !== 'help');
  let profile: Profile;
  let kept: { file: string; dir: string } | undefined;
  if (flags.length > 0) profile = await applyProfileFlags(current, values, { io, runtime });
  else {
    const { edited, file, dir } = editInEditor(current, io.env);
    kept = { file, dir };
    profile = edited as Profile;
    const issues = await manager.validateProfile(profile);
    if (
      typeof edited === 'object' &&
      edited !== null &&
      String((edited as Profile).name).toLowerCase() !== current.name.toLowerCase()
    )
      issues.unshift({
        path: 'name',
        message: `is "${current.name}" (rename a profile with profile add NEW and profile remove ${current.name})`,
      });
    if (issues.length > 0)
      throw new ValidationError(
        'E_INVALID_PROFILE',
        `Profile "${current.name}" was not saved (the old one is kept; your edit is in ${file})`,
        issues,
      );
  }
  const saved = await manager.saveProfile(profile);
  if (kept) rmSync(kept.dir, { recursive: true, force: true });
  io.stdout(values.json ? envelope(saved) : `Saved profile "${saved.name}" (${saved.backend}).\n`);
  return 0;
}
