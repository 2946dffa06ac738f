/** Helpers for the command backend's tests: the toy queue's profile and a manager with its own ledger. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalTransport, createRegistry, JobManager, type Profile } from '@yonder/core';
import { createFsStore } from '@yonder/store-fs';
import { createCommandBackend } from '../command-backend.js';

/** The toy queue's scripts (examples/toyq). */
export const TOYQ = new URL('../../examples/toyq', import.meta.url).pathname;

/** A profile for the toy queue, in a fresh work directory, with `extra` options over its own. */
export function toyqProfile(name: string, extra: Partial<Profile['options']> = {}): Profile {
  return {
    name,
    backend: 'command',
    workdir: join(mkdtempSync(join(tmpdir(), 'yonder cmd work ')), "jobs 'here'"),
    options: {
      submit: `${TOYQ}/toyq-submit {script}`,
      idPattern: 'Job (?<id>\\d+) queued',
      status: `${TOYQ}/toyq-status {external_ids}`,
      cancel: `${TOYQ}/toyq-cancel {external_ids}`,
      ...extra,
    },
  };
}

/** A manager with its own ledger, the command backend and the local transport. */
export function commandManager(): JobManager {
  const state = mkdtempSync(join(tmpdir(), 'yonder-cmd-state-'));
  return new JobManager({
    store: createFsStore({ location: state }),
    registry: createRegistry({
      backends: [createCommandBackend()],
      transports: { local: () => createLocalTransport() },
    }),
    stateDirectory: state,
    minPollIntervalMs: 0,
  });
}
