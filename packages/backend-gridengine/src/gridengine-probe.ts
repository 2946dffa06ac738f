/** The probe of a Grid Engine target (version, qmaster, accounting, parallel environment, $HOME), cached, and where job directories go. */
import {
  type BackendContextV1,
  getErrorMessage,
  type JsonObject,
  type ProbeReportV1,
  type Profile,
} from '@yonder/core';
import { cachedProbe, commandFailure } from '@yonder/core/backend-kit';
import { gridEngineCommand, QUERY_TIMEOUT_MS } from './gridengine-command.js';
import type { GridEngineOptions } from './gridengine-options.js';
import { parseGridEngineVersion } from './parse.js';

/**
 * Reach the target and report what is there; cached under the state directory for the
 * profile's `probeTtlSeconds` (default an hour) unless `fresh`.
 */
export function gridEngineProbe(
  profile: Profile,
  options: GridEngineOptions,
  context: BackendContextV1,
  fresh: boolean,
): Promise<ProbeReportV1> {
  return cachedProbe(
    context.stateDirectory,
    `gridengine|${context.route ?? context.transport.target}|${profile.host ?? ''}|${options.parallelEnvironment ?? ''}`,
    (options.probeTtlSeconds ?? 3600) * 1000,
    fresh,
    () => runProbe(profile, options, context),
  );
}

/** Where job directories go: the profile's workdir, else ~/.yonder/gridengine on the target. */
export function gridEngineWorkdir(profile: Profile, report: ProbeReportV1): string {
  return profile.workdir ?? `${String(report.facts.home ?? '')}/.yonder/gridengine`;
}

async function runProbe(
  profile: Profile,
  options: GridEngineOptions,
  context: BackendContextV1,
): Promise<ProbeReportV1> {
  const facts: JsonObject = { transport: context.transport.target };
  const problems: string[] = [];
  const run = (argv: readonly string[]) =>
    gridEngineCommand(context, argv).catch((error: unknown) => new Error(getErrorMessage(error)));
  // `qstat -help` prints the version first and exits 0 on 8.1.9 (1 on older releases).
  const help = await run(['qstat', '-help']);
  const version = help instanceof Error ? null : parseGridEngineVersion(help.stdout);
  if (help instanceof Error) problems.push(`qstat cannot be run: ${help.message}`);
  else if (version === null)
    problems.push(
      `qstat -help gave no Grid Engine version (is Grid Engine installed and SGE_ROOT set?): ${commandFailure(help)}`,
    );
  else facts.gridEngineVersion = version;
  if (problems.length > 0) return { ok: false, facts, problems };

  const home = await context.transport.runScript('printf "%s" "$HOME"', [], {
    timeoutMs: QUERY_TIMEOUT_MS,
  });
  if (home.exitCode === 0 && home.stdout.startsWith('/')) facts.home = home.stdout;
  else if (!profile.workdir)
    problems.push('the remote $HOME is not an absolute path: set a workdir in the profile');

  const master = await run(['qconf', '-sss']);
  if (master instanceof Error || master.exitCode !== 0)
    problems.push(
      `the qmaster does not answer (qconf -sss): ${master instanceof Error ? master.message : commandFailure(master)}`,
    );
  else facts.qmaster = master.stdout.trim();

  // An id no job has: qacct answers "not found" when it can read the accounting file.
  const accounting = await run(['qacct', '-j', '0']);
  const readable =
    !(accounting instanceof Error) &&
    (accounting.exitCode === 0 || /job id 0 not found/.test(accounting.stderr));
  facts.accounting = readable;
  if (!readable)
    problems.push(
      `Grid Engine accounting (qacct) cannot be read: ${accounting instanceof Error ? accounting.message : commandFailure(accounting)}. Jobs that leave qstat cannot be resolved.`,
    );

  if (options.parallelEnvironment !== undefined) {
    const pe = await run(['qconf', '-sp', options.parallelEnvironment]);
    if (pe instanceof Error || pe.exitCode !== 0)
      problems.push(
        `options.parallelEnvironment: ${options.parallelEnvironment} is not a parallel environment of this cluster (qconf -spl lists them): ${pe instanceof Error ? pe.message : commandFailure(pe)}`,
      );
  }
  return { ok: problems.length === 0, facts, problems };
}
