/**
 * A transport that reaches a running container as a host: every command is one
 * `podman exec -i CONTAINER /bin/sh -s`, its argv sent on stdin in the transport kit's framing,
 * so nothing the job asks for is ever parsed by a shell or put on podman's command line.
 */
import {
  type Profile,
  type RunOptionsV1,
  type RunResultV1,
  type Static,
  type TransportDescriptionV1,
  type TransportFactoryV1,
  type TransportV1,
  Type,
  YonderError,
} from '@yonder/core';
import { parseOptions, runLocal, withFixedSearchPath } from '@yonder/core/backend-kit';
import { framedResult, remoteInvocation, runFramedChild } from '@yonder/core/transport-kit';

/** What a profile may set for this transport (`transportOptions`); the container is its `host`. */
export const PodmanTransportOptionsSchema = Type.Object(
  {
    podman: Type.Optional(
      Type.String({
        pattern: '^/',
        description: 'The podman program, as an absolute path. Default: podman on the search path.',
      }),
    ),
    user: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_][A-Za-z0-9_.:-]*$',
        description: 'Run as this user (or uid[:gid]) inside the container: podman exec --user.',
      }),
    ),
  },
  { additionalProperties: false },
);

export type PodmanTransportOptions = Static<typeof PodmanTransportOptionsSchema>;

/** Container names and ids as podman makes them: never one podman could read as an option. */
const CONTAINER_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/** The container a profile names as its host. */
function containerOf(profile: Profile): string {
  const host = profile.host;
  if (!host)
    throw new YonderError(
      'E_INVALID_PROFILE',
      `Profile "${profile.name}" names no container: set its host to the container's name or id (--host NAME).`,
    );
  if (!CONTAINER_PATTERN.test(host))
    throw new YonderError(
      'E_INVALID_PROFILE',
      `Profile "${profile.name}": host ${JSON.stringify(host)} is not a container name or id (letters, digits, then also _ . -).`,
    );
  return host;
}

class PodmanTransport implements TransportV1 {
  readonly specificationVersion = 'v1' as const;
  readonly id = 'podman';
  readonly streamsStdout = true;
  readonly target: string;
  private readonly container: string;
  private readonly program: string;
  private readonly env: NodeJS.ProcessEnv;
  private readonly children = new Set<{ kill: (signal: NodeJS.Signals) => boolean }>();
  private closed = false;

  constructor(
    profile: Profile,
    private readonly options: PodmanTransportOptions,
  ) {
    this.container = containerOf(profile);
    this.target = `podman:${this.container}`;
    this.program = options.podman ?? 'podman';
    // Never a podman (or its helpers) found in the working directory.
    this.env = withFixedSearchPath(process.env);
  }

  async run(argv: readonly string[], options: RunOptionsV1 = {}): Promise<RunResultV1> {
    if (argv.length === 0) throw new YonderError('E_TRANSPORT', 'No program given to run.');
    if (this.closed) throw new YonderError('E_TRANSPORT', 'The podman transport was closed.');
    if (options.signal?.aborted)
      throw new YonderError('E_TRANSPORT', 'Command aborted before it started.');
    const invocation = remoteInvocation(argv, options);
    const user = this.options.user === undefined ? [] : ['--user', this.options.user];
    const outcome = await runFramedChild(
      {
        program: this.program,
        args: ['exec', '--interactive', ...user, '--', this.container, '/bin/sh', '-s'],
        env: this.env,
        target: this.target,
        track: (child, running) => {
          if (running) this.children.add(child);
          else this.children.delete(child);
        },
      },
      invocation,
    );
    if (outcome.kind === 'failed') throw outcome.error;
    return framedResult(outcome.end, invocation, this.target, this.program);
  }

  runScript(script: string, args: readonly string[], options?: RunOptionsV1): Promise<RunResultV1> {
    return this.run(['sh', '-c', script, 'yonder-script', ...args], options);
  }

  /** Whether the container is there and running, from `podman container inspect`. */
  async describe(): Promise<TransportDescriptionV1> {
    const facts = { transport: this.id, container: this.container };
    let state: string;
    try {
      const inspected = await runLocal(
        [
          this.program,
          'container',
          'inspect',
          '--format',
          '{{.State.Status}}',
          '--',
          this.container,
        ],
        { timeoutMs: 30_000 },
      );
      if (inspected.exitCode !== 0)
        return {
          facts,
          warnings: [],
          problems: [
            `podman knows no container ${this.container}: ${inspected.stderr.trim() || `exit status ${inspected.exitCode}`}`,
          ],
        };
      state = inspected.stdout.trim();
    } catch (error) {
      return { facts, warnings: [], problems: [(error as Error).message] };
    }
    return {
      facts: { ...facts, state },
      warnings: [],
      problems:
        state === 'running'
          ? []
          : [`the container ${this.container} is ${state}, not running: podman start it`],
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const child of this.children) child.kill('SIGTERM');
  }
}

/** Make the transport for a profile by hand, its options checked as the registry checks them. */
export function createPodmanTransport(profile: Profile): TransportV1 {
  return new PodmanTransport(
    profile,
    parseOptions({
      schema: PodmanTransportOptionsSchema,
      options: profile.transportOptions ?? {},
      path: 'transportOptions',
      subject: `Profile "${profile.name}" has invalid options for the podman transport`,
    }),
  );
}

/** The factory the registry calls, with the schema it checks `transportOptions` against. */
export const podmanTransportFactory: TransportFactoryV1<PodmanTransportOptions> = Object.assign(
  (profile: Profile, options: PodmanTransportOptions) => new PodmanTransport(profile, options),
  { optionsSchema: PodmanTransportOptionsSchema },
);
