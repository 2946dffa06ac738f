export { REMOTE_COMMAND } from '@yonder/core/transport-kit';
export {
  appendKnownHost,
  blobType,
  checkHostKey,
  fingerprint,
  type HostKeyVerdict,
  hostsMatch,
  type KnownHostEntry,
  loadKnownHosts,
  lookupName,
  parseKnownHosts,
} from './known-hosts.js';
export {
  createOpensshTransport,
  type OpensshConnectResult,
  OpensshTransport,
  type OpensshTransportOptions,
  opensshTransportFactory,
} from './openssh-transport.js';
export {
  DEFAULT_CONTROL_PERSIST_SECONDS,
  type OpensshSettings,
  OpensshTransportOptionsSchema,
  opensshSettings,
} from './openssh-transport-options.js';
export {
  createSshBackend,
  SSH_BACKEND_ID,
  type SshBackendOptions,
  SshOptionsSchema,
} from './ssh-backend.js';
export {
  type ResolvedHost,
  type ResolveOptions,
  resolveHost,
  splitDestination,
} from './ssh-config.js';
export {
  createSshTransport,
  SshTransport,
  type SshTransportOptions,
  sshTransportFactory,
} from './ssh-transport.js';
export {
  type SshSettings,
  SshTransportOptionsSchema,
  sshSettings,
} from './ssh-transport-options.js';

import type { PluginV1 } from '@yonder/core';
import { opensshTransportFactory as opensshTransport } from './openssh-transport.js';
import { createSshBackend as sshBackend } from './ssh-backend.js';
import { sshTransportFactory as sshTransport } from './ssh-transport.js';

/**
 * The plugin entry the CLI loads by package name: the ssh backend and the transports — `openssh`
 * (the system ssh) and the in-process ssh2 one, registered as `ssh` (the id older profiles
 * use) and as `ssh2`.
 */
export function createYonderPlugin(): PluginV1 {
  return {
    specificationVersion: 'v1',
    backends: [sshBackend()],
    transports: { ssh: sshTransport, ssh2: sshTransport, openssh: opensshTransport },
  };
}

/** Replaced at build by this package's version from package.json (tsup `define`; vitest does the same). */
declare const __PACKAGE_VERSION__: string;

/** This package's version, from its package.json. */
export const VERSION: string = __PACKAGE_VERSION__;
