/** Which ssh transport a new profile gets when it names none: `openssh` where an OpenSSH client of 8.0 or later is on PATH (and not on Windows), else `ssh2`. */
import { spawnSync } from 'node:child_process';
import { withFixedSearchPath } from '@yonder/core/backend-kit';

/** The OpenSSH client's version on PATH (`ssh -V`, e.g. [9, 2]), or null when there is none. */
export function openSshVersion(env: NodeJS.ProcessEnv): [number, number] | null {
  // `main` is exported: a program embedding the CLI may not have fixed its own PATH.
  const result = spawnSync('ssh', ['-V'], {
    env: withFixedSearchPath(env),
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (result.error || result.status !== 0) return null;
  const match = /OpenSSH_(\d+)\.(\d+)/.exec(`${result.stderr}${result.stdout}`);
  return match ? [Number(match[1]), Number(match[2])] : null;
}

/** The transport for a profile whose backend reaches its host over ssh and that names none. */
export function defaultSshTransport(
  env: NodeJS.ProcessEnv,
  platform: NodeJS.Platform = process.platform,
): 'openssh' | 'ssh2' {
  if (platform === 'win32') return 'ssh2';
  const version = openSshVersion(env);
  return version !== null && version[0] >= 8 ? 'openssh' : 'ssh2';
}
