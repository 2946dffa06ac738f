/** Opening the UI in the user's browser without putting the token on a command line: a private redirect file, opened with the platform's opener. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withFixedSearchPath } from '@yonder/core/backend-kit';

function opener(): { command: string; args: string[] } {
  if (process.platform === 'darwin') return { command: 'open', args: [] };
  if (process.platform === 'win32') return { command: 'explorer.exe', args: [] };
  return { command: 'xdg-open', args: [] };
}

/**
 * Open `url` in a browser. Other users can read a process's arguments, so the opener is given
 * a file in a private (0700) directory that redirects to the address; the file is removed by
 * the function returned. Resolves with a message when no opener could be started.
 */
export async function openBrowser(
  url: string,
): Promise<{ cleanup: () => void; problem: string | null }> {
  const directory = mkdtempSync(join(tmpdir(), 'yonder-ui-'));
  const file = join(directory, 'open.html');
  const cleanup = (): void => rmSync(directory, { recursive: true, force: true });
  const target = url.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
  writeFileSync(
    file,
    `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${target}"><title>yonder</title><a href="${target}">Open yonder</a>\n`,
    { mode: 0o600, flag: 'wx' },
  );
  const { command, args } = opener();
  const problem = await new Promise<string | null>((resolve) => {
    const child = spawn(command, [...args, file], {
      stdio: 'ignore',
      detached: true,
      env: withFixedSearchPath(process.env),
    });
    child.once('error', (error) => resolve(`could not start ${command}: ${error.message}`));
    child.once('spawn', () => {
      child.unref();
      resolve(null);
    });
  });
  return { cleanup, problem };
}
