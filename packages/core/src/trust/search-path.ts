/** The program search path yonder starts programs with: only the entries of `PATH` that name a fixed directory. */

/**
 * What a program search gets when `PATH` names no fixed directory: the directories Node (libuv's
 * `_PATH_DEFPATH`) searches when `PATH` is unset. Never an empty `PATH`: to `exec` and to `sh`
 * an empty one is one empty entry, the working directory itself; and never an unset one, since
 * bash then puts `.` at the end of its own default.
 */
export const DEFAULT_SEARCH_PATH = '/usr/bin:/bin';

/**
 * `PATH` without the entries that name no fixed directory: an empty one (a stray `:`), `.`, and
 * any other relative one look programs up in whatever the working directory is, which may be a
 * directory another user writes (a shared /tmp, a project directory), so that `sh` or `find`
 * would be theirs. The absolute entries stay, in order; with none (or no `PATH` at all),
 * DEFAULT_SEARCH_PATH.
 */
export function fixedSearchPath(path: string | undefined): string {
  const fixed = (path ?? '')
    .split(':')
    .filter((entry) => entry.startsWith('/'))
    .join(':');
  return fixed === '' ? DEFAULT_SEARCH_PATH : fixed;
}

/**
 * `env` with its PATH set to fixedSearchPath, and without a SHELL that is not an absolute path:
 * ssh (for a ProxyCommand, a LocalCommand, `Match exec`) and others exec `$SHELL` by its path,
 * so a relative one is the working directory's; without it they use /bin/sh. A new object;
 * `env` is left as it was.
 */
export function withFixedSearchPath(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const fixed: NodeJS.ProcessEnv = { ...env, PATH: fixedSearchPath(env.PATH) };
  if (fixed.SHELL !== undefined && !fixed.SHELL.startsWith('/')) delete fixed.SHELL;
  return fixed;
}
