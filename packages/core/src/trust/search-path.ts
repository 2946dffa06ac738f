/** The program search path yonder starts programs with: only the entries of `PATH` that name a fixed directory. */

/**
 * `PATH` without the entries that name no fixed directory: an empty one (a stray `:`), `.`, and
 * any other relative one look programs up in whatever the working directory is, which may be a
 * directory another user writes (a shared /tmp, a project directory), so that `sh` or `find`
 * would be theirs. The absolute entries stay, in order. Undefined stays undefined.
 */
export function fixedSearchPath(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  return path
    .split(':')
    .filter((entry) => entry.startsWith('/'))
    .join(':');
}

/** `env` with its PATH cut down to fixedSearchPath (a new object; `env` is left as it was). */
export function withFixedSearchPath(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (env.PATH === undefined) return { ...env };
  return { ...env, PATH: fixedSearchPath(env.PATH) };
}
