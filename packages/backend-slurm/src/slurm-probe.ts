/** The probe of a Slurm target (version, controller, accounting, $HOME), cached, and what follows from it. */
import {
  type BackendContextV1,
  getErrorMessage,
  type JsonObject,
  type ProbeReportV1,
  type Profile,
} from '@yonder/core';
import { binDirProblems, CHECK_BIN_DIR_SCRIPT, cachedProbe } from '@yonder/core/backend-kit';
import { parseMinJobAge, parseSlurmVersion } from './parse.js';
import { SLURM_COMMANDS } from './scripts.js';
import { answered, commandFailure, QUERY_TIMEOUT_MS, slurmCommand } from './slurm-command.js';
import type { SlurmOptions } from './slurm-options.js';

/** The oldest Slurm this backend is tested against (Debian 12). */
export const MIN_SLURM_VERSION = { major: 22, minor: 5 };

/**
 * Reach the target and report what is there; cached under the state directory for the
 * profile's `probeTtlSeconds` (default an hour) unless `fresh`.
 */
export function slurmProbe(
  profile: Profile,
  options: SlurmOptions,
  context: BackendContextV1,
  fresh: boolean,
): Promise<ProbeReportV1> {
  return cachedProbe(
    context.stateDirectory,
    `slurm|${context.route ?? context.transport.target}|${profile.host ?? ''}|${options.binDir ?? ''}`,
    (options.probeTtlSeconds ?? 3600) * 1000,
    fresh,
    () => runProbe(profile, options, context),
  );
}

/** sacct's answer on a cluster that keeps no accounting at all: a lasting problem. */
const ACCOUNTING_DISABLED = /accounting storage is disabled/i;
/** How a probe problem starts when accounting did not answer this time (slurmdbd down, say). */
const ACCOUNTING_UNREACHABLE = 'Slurm accounting (sacct) does not answer now';

/**
 * The problems of a probe that make Slurm not usable for a submit: all but accounting that
 * does not answer now. Jobs run without slurmdbd (slurmctld keeps its messages), and a probe
 * cached while it answered would let the submit through: the rule is the same whether the
 * probe is fresh or cached. `profile check` reports every problem.
 */
export function submitBlockers(report: ProbeReportV1): string[] {
  return report.problems.filter((problem) => !problem.startsWith(ACCOUNTING_UNREACHABLE));
}

/** Where job directories go: the profile's workdir, else ~/.yonder/slurm on the target. */
export function slurmWorkdir(profile: Profile, report: ProbeReportV1): string {
  return profile.workdir ?? `${String(report.facts.home ?? '')}/.yonder/slurm`;
}

async function runProbe(
  profile: Profile,
  options: SlurmOptions,
  context: BackendContextV1,
): Promise<ProbeReportV1> {
  const facts: JsonObject = { transport: context.transport.target };
  const problems = options.binDir === undefined ? [] : await binDirIssues(options.binDir, context);
  // Without the commands there is nothing more to ask (and nothing else is run in their place).
  if (problems.length > 0) return { ok: false, facts, problems };
  const slurm = (argv: readonly string[]) =>
    slurmCommand(context, options, argv).catch(
      (error: unknown) => new Error(getErrorMessage(error)),
    );
  const version = await slurm(['sbatch', '--version']);
  if (version instanceof Error) {
    problems.push(`sbatch cannot be run: ${version.message}`);
  } else if (version.exitCode !== 0) {
    problems.push(`sbatch --version failed: ${commandFailure(version)}`);
  } else {
    const parsed = parseSlurmVersion(version.stdout);
    if (!parsed)
      problems.push(
        `unrecognised sbatch --version output: ${JSON.stringify(version.stdout.slice(0, 200))}`,
      );
    else {
      facts.slurmVersion = parsed.text;
      if (
        parsed.major < MIN_SLURM_VERSION.major ||
        (parsed.major === MIN_SLURM_VERSION.major && parsed.minor < MIN_SLURM_VERSION.minor)
      ) {
        problems.push(`Slurm ${parsed.text} is older than 22.05, the oldest this backend supports`);
      }
    }
  }
  if (problems.length === 0) {
    const home = await context.transport.runScript('printf "%s" "$HOME"', [], {
      timeoutMs: QUERY_TIMEOUT_MS,
    });
    if (home.exitCode === 0 && home.stdout.startsWith('/')) facts.home = home.stdout;
    else if (!profile.workdir)
      problems.push('the remote $HOME is not an absolute path: set a workdir in the profile');
    const config = await slurm(['scontrol', 'show', 'config']);
    if (config instanceof Error || config.exitCode !== 0) {
      problems.push(
        `slurmctld does not answer (scontrol show config): ${config instanceof Error ? config.message : commandFailure(config)}`,
      );
    } else {
      facts.minJobAgeSeconds = parseMinJobAge(config.stdout);
    }
    const accounting = await slurm([
      'sacct',
      '--noheader',
      '--parsable2',
      '--allocations',
      '--starttime=now-1minutes',
      '--endtime=now',
      '--format=JobIDRaw',
    ]);
    facts.accounting = !(accounting instanceof Error) && answered(accounting);
    if (!facts.accounting) {
      const said = accounting instanceof Error ? accounting.message : commandFailure(accounting);
      problems.push(
        ACCOUNTING_DISABLED.test(said)
          ? `Slurm accounting (sacct) does not work: ${said}. Jobs that leave squeue cannot be resolved.`
          : `${ACCOUNTING_UNREACHABLE}: ${said}. Jobs that leave squeue are resolved once it answers again.`,
      );
    }
  }
  return { ok: problems.length === 0, facts, problems };
}

/**
 * What is wrong with a profile's `binDir` on the target: it and each Slurm command in it must be
 * an executable file that only the user or root can change (the trust rule, as every Slurm
 * command applies it before it runs).
 */
async function binDirIssues(binDir: string, context: BackendContextV1): Promise<string[]> {
  const result = await context.transport
    .runScript(CHECK_BIN_DIR_SCRIPT, [binDir, 'Slurm bin directory', ...SLURM_COMMANDS], {
      timeoutMs: QUERY_TIMEOUT_MS,
    })
    .catch((error: unknown) => new Error(getErrorMessage(error)));
  if (result instanceof Error)
    return [`options.binDir: ${binDir} could not be checked: ${result.message}`];
  if (result.exitCode !== 0)
    return [`options.binDir: ${binDir} could not be checked: ${commandFailure(result)}`];
  return binDirProblems(result.stdout, binDir, 'options.binDir');
}
