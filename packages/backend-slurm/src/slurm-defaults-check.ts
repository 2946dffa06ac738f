/** `profile check`'s look at a profile's defaults: every submit carries them, so a default that every submit would have refused is a problem of the profile. */
import { type BackendContextV1, getErrorMessage, type Profile } from '@yonder/core';
import { isTransientSbatchFailure, sbatchFailure } from './parse.js';
import { resourceOptions, schedulerOptionIssues } from './sbatch-options.js';
import { slurmCommand } from './slurm-command.js';
import type { SlurmOptions } from './slurm-options.js';

/** How long `sbatch --test-only` may take (it may retry while the controller is busy). */
const TEST_ONLY_TIMEOUT_MS = 180_000;

/**
 * The problems of a profile's default resources and scheduler options: each default option
 * yonder refuses before submission (the rule every submit applies), else what
 * `sbatch --test-only` (which creates no job) says when Slurm refuses them. A controller that
 * does not answer is not the defaults' fault: the probe reports it.
 */
export async function defaultsProblems(
  profile: Profile,
  options: SlurmOptions,
  context: BackendContextV1,
): Promise<string[]> {
  const words = profile.defaults?.schedulerOptions ?? [];
  const refused = schedulerOptionIssues(words);
  if (refused.length > 0)
    return refused.map(
      (issue) =>
        `defaults.${issue.path}: ${issue.message}; every submit through this profile would be refused`,
    );
  const asked = [...resourceOptions(profile.defaults?.resources ?? {}), ...words];
  if (asked.length === 0) return [];
  const result = await slurmCommand(
    context,
    options,
    ['sbatch', '--test-only', '--output=/dev/null', ...asked],
    TEST_ONLY_TIMEOUT_MS,
    '#!/bin/sh\ntrue\n',
  ).catch((error: unknown) => new Error(getErrorMessage(error)));
  if (result instanceof Error || result.exitCode === 0) return [];
  const said = result.stderr || result.stdout;
  if (isTransientSbatchFailure(said)) return [];
  return [
    `sbatch refuses the profile's defaults (${asked.join(' ')}), so every submit through it would be refused: ${sbatchFailure(said)}`,
  ];
}
