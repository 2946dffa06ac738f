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
export { createSshBackend, SSH_BACKEND_ID, SshOptionsSchema } from './ssh-backend.js';
export {
  type ResolvedHost,
  type ResolveOptions,
  resolveHost,
  splitDestination,
} from './ssh-config.js';
export { createSshTransport, SshTransport, type SshTransportOptions } from './ssh-transport.js';

/** This package's version. */
export const VERSION: string = '0.1.0';
