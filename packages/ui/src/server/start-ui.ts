/** startUi: the `yonder ui` server on 127.0.0.1, with its token, the live index of the ledger and the log followers, until closed. */
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { type JobManager, YonderError } from '@yonder/core';
import { JobIndex } from './job-index.js';
import { LiveHub } from './live-hub.js';
import { LogFollowers } from './log-followers.js';
import { openBrowser } from './open-browser.js';
import { createSecrets } from './security.js';
import { createUiApp, type UiAssets } from './ui-app.js';

export interface StartUiOptions {
  readonly manager: JobManager;
  /** The port on 127.0.0.1; 0 (the default) picks a free one. */
  readonly port?: number;
  /** Open the page in a browser. Default false. */
  readonly open?: boolean;
  /** How often the ledger is read for changes. Default 1000 ms. */
  readonly intervalMs?: number;
  /** Where the bundled page script and style are. Default: beside this module, in `client/`. */
  readonly assetsDirectory?: string;
}

export interface UiServer {
  /** The page's address, with the session's token. */
  readonly url: string;
  readonly port: number;
  /** Why the browser could not be opened, when asked to and it could not. */
  readonly openProblem: string | null;
  /** Stop serving and following; the manager is left open. */
  close(): Promise<void>;
}

function readAssets(directory: string): UiAssets {
  try {
    const script = readFileSync(`${directory}/app.js`, 'utf8');
    const style = readFileSync(`${directory}/style.css`, 'utf8');
    const version = String(script.length + style.length);
    return { script, style, version };
  } catch (error) {
    throw new YonderError(
      'E_INTERNAL',
      `The page of @yonder/ui is missing from ${directory} (is the package built?)`,
      { cause: error },
    );
  }
}

/**
 * Serve the UI on 127.0.0.1: read the whole ledger into the index, start following it, listen,
 * and resolve with the address (which carries the token) once the page can be served.
 */
export async function startUi(options: StartUiOptions): Promise<UiServer> {
  const assets = readAssets(
    options.assetsDirectory ?? fileURLToPath(new URL('./client', import.meta.url)),
  );
  const secrets = createSecrets();
  const index = new JobIndex();
  const hub = new LiveHub(options.manager, index, {
    ...(options.intervalMs === undefined ? {} : { intervalMs: options.intervalMs }),
  });
  const logs = new LogFollowers(options.manager);
  await hub.start();
  let port = options.port ?? 0;
  const app = createUiApp({
    manager: options.manager,
    index,
    hub,
    logs,
    secrets,
    assets,
    port: () => port,
  });
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve({ fetch: app.fetch, hostname: '127.0.0.1', port }, () =>
      resolve(started),
    );
    started.once('error', (error) => {
      hub.close();
      reject(
        // Not a usage error: the command line was right, the port is not to be had now.
        new YonderError(
          'E_LISTEN_FAILED',
          `Could not listen on 127.0.0.1:${port}: ${error.message}${port === 0 ? '' : '; choose another port, or none for a free one'}`,
          { cause: error },
        ),
      );
    });
  });
  port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}/?token=${secrets.token}`;
  let cleanup = (): void => {};
  let openProblem: string | null = null;
  if (options.open) {
    const opened = await openBrowser(url);
    cleanup = opened.cleanup;
    openProblem = opened.problem;
  }
  return {
    url,
    port,
    openProblem,
    async close() {
      hub.close();
      logs.close();
      cleanup();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
    },
  };
}
