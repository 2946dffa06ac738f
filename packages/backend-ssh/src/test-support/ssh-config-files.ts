/** Scratch ssh configs for the config reader's tests, and what `ssh -G` makes of one. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ResolvedHost, resolveHost } from '../ssh-config.js';

/** Fresh config files under one scratch directory (call `cleanup` after the tests). */
export function createConfigScratch(prefix: string) {
  const scratch = mkdtempSync(join(tmpdir(), `${prefix}-`));
  let counter = 0;

  /** A fresh directory inside the scratch directory. */
  const freshDir = (): string => {
    counter += 1;
    const dir = join(scratch, `case-${counter}`);
    mkdirSync(dir, { recursive: true });
    return dir;
  };

  /**
   * Write an ssh config as `HOME/.ssh/config` of a fresh home (and optional extra files in that
   * ~/.ssh, where relative Includes are looked for); returns the config's path and the home.
   */
  const configFile = (
    body: string,
    extra: Record<string, string> = {},
  ): { file: string; home: string } => {
    const home = freshDir();
    const dir = join(home, '.ssh');
    mkdirSync(dir);
    for (const [name, text] of Object.entries(extra)) {
      const path = join(dir, name);
      mkdirSync(join(path, '..'), { recursive: true });
      writeFileSync(path, text);
    }
    const file = join(dir, 'config');
    writeFileSync(file, body);
    return { file, home };
  };

  /** Resolve a destination through a config of `body` (and `extra` files in its ~/.ssh). */
  const resolve = (
    destination: string,
    body: string,
    env: NodeJS.ProcessEnv = {},
    extra: Record<string, string> = {},
  ): ResolvedHost => {
    const { file, home } = configFile(body, extra);
    // The fresh home only where included files are: `~` in values stays this user's home.
    return resolveHost(destination, {
      configFiles: [file],
      env,
      ...(Object.keys(extra).length > 0 ? { home } : {}),
    });
  };

  const cleanup = (): void => rmSync(scratch, { recursive: true, force: true });
  return { scratch, freshDir, configFile, resolve, cleanup };
}

/** What OpenSSH itself resolves (`ssh -G -F file destination`), every key with its values. */
export function sshG(file: string, destination: string): Record<string, string[]> {
  const out = execFileSync('ssh', ['-G', '-F', file, destination], {
    stdio: ['ignore', 'pipe', 'pipe'],
  }).toString();
  const result: Record<string, string[]> = {};
  for (const row of out.split('\n')) {
    const space = row.indexOf(' ');
    if (space < 0) continue;
    const key = row.slice(0, space);
    result[key] = [...(result[key] ?? []), row.slice(space + 1)];
  }
  return result;
}
