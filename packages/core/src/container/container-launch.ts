/** How a job in a container is handed to its target: the check a submit makes, the launcher's arguments, and the variables and secrets as the runtime takes them. */
import type { ValidationIssue } from '../errors/validation-error.js';
import type { SubmitRequestV1 } from '../spec/backend/v1/backend-v1.js';
import type { ResolvedContainer } from '../spec/container.js';
import { containerBinds, containerPlacementIssues } from '../validation/validate-container.js';
import { CONTAINER_LAUNCH_SCRIPT } from './container-scripts.js';

/** apptainer binds this read-only, as the Slurm launcher seed does: names resolve inside. */
const RESOLV_CONF = '/etc/resolv.conf';
/** The CDI device podman is given for `gpus: true`. */
const ALL_NVIDIA_GPUS = 'nvidia.com/gpu=all';
/** The prefix of a secret's variable between the secrets file and the launcher (podman). */
const SECRET_PREFIX = 'YONDER_SECRET_';
/** The prefix of a variable's between the job's env file and the launcher (podman). */
const ENV_PREFIX = 'YONDER_ENV_';

/** What the container needs to know of the job. */
export interface ContainerJob {
  readonly id: string;
  readonly name: string;
  /** The job directory on the target: bound read-write at the same path. */
  readonly jobDir: string;
  /** The directory the job runs in, inside the container; default the job directory. */
  readonly cwd?: string;
  /** The job's variables (yonder's own `YONDER_JOB_*` are added). */
  readonly env: Readonly<Record<string, string>>;
  readonly secrets: Readonly<Record<string, string>>;
  /** The job's argv, `{settings}` already replaced. */
  readonly argv: readonly string[];
}

/** A job in a container, ready for a submit script. */
export interface ContainerLaunch {
  /** `container_check`'s arguments: runtime, image, the number of bind sources, the sources. */
  readonly check: readonly string[];
  /**
   * The launcher's arguments after the runtime and the image (which the submit script puts
   * first, the image as `container_check` resolved it): secret names, runtime options, argv.
   */
  readonly args: readonly string[];
  /** What goes in the job's `env.sh`. */
  readonly env: Readonly<Record<string, string>>;
  /** What goes in the job's 0600 `secrets.sh`. */
  readonly secrets: Readonly<Record<string, string>>;
}

function prefixed(
  variables: Readonly<Record<string, string>>,
  prefix: string,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(variables).map(([name, value]) => [prefix + name, value]),
  );
}

/** The job's variables inside the container: the container's, the job's over them, then yonder's. */
function insideVariables(container: ResolvedContainer, job: ContainerJob): Record<string, string> {
  return {
    ...container.env,
    ...job.env,
    YONDER_JOB_ID: job.id,
    YONDER_JOB_NAME: job.name,
    YONDER_JOB_DIR: job.jobDir,
  };
}

/** podman's options: never pull, labelled, the job directory and the binds (the variables go on a pipe). */
function podmanOptions(container: ResolvedContainer, job: ContainerJob): string[] {
  const options = [
    '--pull=never',
    `--label=yonder.job=${job.id}`,
    '--http-proxy=false',
    `--workdir=${job.cwd ?? job.jobDir}`,
    `--volume=${job.jobDir}:${job.jobDir}:rw`,
    ...containerBinds(container).map(
      (bind) => `--volume=${bind.source}:${bind.destination}:${bind.mode}`,
    ),
  ];
  if (container.gpus !== false)
    options.push(`--device=${container.gpus === true ? ALL_NVIDIA_GPUS : container.gpus}`);
  return options;
}

/** apptainer's options, after the seed's: contained, a clean environment, no home, the binds. */
function apptainerOptions(container: ResolvedContainer, job: ContainerJob): string[] {
  const options = [
    '--containall',
    '--cleanenv',
    '--no-home',
    '--pwd',
    job.cwd ?? job.jobDir,
    '--bind',
    `${job.jobDir}:${job.jobDir}:rw`,
    '--bind',
    `${RESOLV_CONF}:${RESOLV_CONF}:ro`,
    ...containerBinds(container).flatMap((bind) => [
      '--bind',
      `${bind.source}:${bind.destination}:${bind.mode}`,
    ]),
  ];
  if (container.gpus === true) options.push('--nv');
  return options;
}

/**
 * Put a job in its container: what the submit script checks on the target, the launcher's
 * arguments, and the variables for the job's files. podman is given the variables and the
 * secrets on a pipe by the launcher (`--env-file`: never on its command line, which every user
 * can read in /proc), which takes them from the job's env file as `YONDER_ENV_<NAME>` and from
 * its secrets file as `YONDER_SECRET_<NAME>` (the variables after the secrets: a variable wins,
 * as it did over a secret of the same name); apptainer takes both from its environment as
 * `APPTAINERENV_<NAME>` (its `--cleanenv` keeps those only).
 */
export function containerLaunch(container: ResolvedContainer, job: ContainerJob): ContainerLaunch {
  const sources = containerBinds(container).map((bind) => bind.source);
  const check = [container.runtime, container.image, String(sources.length), ...sources];
  if (container.runtime === 'podman') {
    const options = podmanOptions(container, job);
    const inside = insideVariables(container, job);
    const names = [
      ...Object.keys(job.secrets).map((name) => SECRET_PREFIX + name),
      ...Object.keys(inside).map((name) => ENV_PREFIX + name),
    ];
    return {
      check,
      args: [String(names.length), ...names, String(options.length), ...options, ...job.argv],
      env: {
        YONDER_JOB_ID: job.id,
        YONDER_JOB_NAME: job.name,
        YONDER_JOB_DIR: job.jobDir,
        ...prefixed(inside, ENV_PREFIX),
      },
      secrets: prefixed(job.secrets, SECRET_PREFIX),
    };
  }
  const options = apptainerOptions(container, job);
  return {
    check,
    args: ['0', String(options.length), ...options, ...job.argv],
    env: prefixed(insideVariables(container, job), 'APPTAINERENV_'),
    secrets: prefixed(job.secrets, 'APPTAINERENV_'),
  };
}

/**
 * A submit request's container, ready for its submit script once its job directory on the
 * target is known: null without a container; the issues when its binds may not go there.
 */
export function requestLaunch(
  request: SubmitRequestV1,
  place: { readonly workdir: string; readonly jobDir: string; readonly argv: readonly string[] },
): { launch: ContainerLaunch | null; issues: ValidationIssue[] } {
  const { container } = request;
  if (!container) return { launch: null, issues: [] };
  const issues = containerPlacementIssues(container, place);
  if (issues.length > 0) return { launch: null, issues };
  const launch = containerLaunch(container, {
    id: request.id,
    name: request.name,
    jobDir: place.jobDir,
    ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
    env: request.env,
    secrets: request.secrets,
    argv: place.argv,
  });
  return { launch, issues };
}

/**
 * The argv a wrapper runs for a job in a container: the launcher, through `sh`, with the
 * runtime and the image first. Submit scripts build the same in sh, with the image as the
 * target resolved it; this is for callers that run the launcher themselves (and its tests).
 */
export function launcherArgv(runtime: string, image: string, args: readonly string[]): string[] {
  return ['sh', '-c', CONTAINER_LAUNCH_SCRIPT, 'yonder-container', runtime, image, ...args];
}
