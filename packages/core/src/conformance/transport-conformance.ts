/** The transport contract's conformance suite: what every transport (local, ssh, a plugin's) must do, run from a three-line test. */
import { YonderError } from '../errors/yonder-error.js';
import type { TransportV1 } from '../spec/transport/v1/transport-v1.js';
import type { TestFunction } from './types.js';

export interface TransportConformanceOptions {
  /** Time limit of each test, in ms. Default 60 s. */
  timeoutMs?: number;
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`Transport conformance: ${message}`);
}

async function rejects(promise: Promise<unknown>, code: string, what: string): Promise<void> {
  try {
    await promise;
  } catch (error) {
    check(
      YonderError.isInstance(error) && error.code === code,
      `${what} should fail with ${code}, got ${String(error)}`,
    );
    return;
  }
  throw new Error(`Transport conformance: ${what} should fail with ${code}, but succeeded`);
}

/** Words a shell would read as code, quotes, globs, line breaks, leading dashes and non-ASCII. */
const HOSTILE = [
  '$(echo injected)',
  '; echo injected',
  '`echo injected`',
  "it's",
  '"dq"',
  'new\nline',
  '-n',
  '--help',
  'sp ace',
  'tab\there',
  '*',
  '$HOME',
  'ünï ✓',
  '',
];

/**
 * Register the suite with your test runner: `transportConformance(it, () => createMyTransport())`.
 * Each test gets a fresh transport and closes it. The target needs a POSIX `sh`, `printf`,
 * `cat`, `sleep` and `head`.
 */
export function transportConformance(
  test: TestFunction,
  create: () => TransportV1 | Promise<TransportV1>,
  options: TransportConformanceOptions = {},
): void {
  const timeout = options.timeoutMs ?? 60_000;
  const withTransport =
    (fn: (transport: TransportV1) => Promise<void>) => async (): Promise<void> => {
      const transport = await create();
      try {
        await fn(transport);
      } finally {
        await transport.close();
      }
    };

  test(
    'transport: implements contract v1',
    withTransport(async (transport) => {
      check(transport.specificationVersion === 'v1', 'specificationVersion must be "v1"');
      check(typeof transport.id === 'string' && transport.id !== '', 'id must be a string');
      check(typeof transport.target === 'string' && transport.target !== '', 'target is empty');
      for (const method of ['run', 'runScript', 'close'] as const)
        check(typeof transport[method] === 'function', `${method} must be a function`);
    }),
    timeout,
  );

  test(
    'transport: argv reaches the program literally, whatever it holds',
    withTransport(async (transport) => {
      const result = await transport.run(['printf', '%s\\n', ...HOSTILE]);
      check(result.exitCode === 0, `printf exited ${result.exitCode}: ${result.stderr}`);
      check(
        result.stdout === `${HOSTILE.join('\n')}\n`,
        `argv was changed on the way: ${JSON.stringify(result.stdout)}`,
      );
    }),
    timeout,
  );

  test(
    'transport: a script gets its values as $1… and its input on stdin',
    withTransport(async (transport) => {
      const result = await transport.runScript('printf "%s|" "$@"; cat', HOSTILE, {
        input: 'from stdin\n',
      });
      check(result.exitCode === 0, `the script exited ${result.exitCode}: ${result.stderr}`);
      check(
        result.stdout === `${HOSTILE.join('|')}|from stdin\n`,
        `the script's arguments or input were changed: ${JSON.stringify(result.stdout)}`,
      );
      const empty = await transport.runScript('cat; echo end', []);
      check(empty.stdout === 'end\n', 'stdin must be empty without input');
    }),
    timeout,
  );

  test(
    'transport: a non-zero exit is a result, with stdout and stderr kept apart',
    withTransport(async (transport) => {
      const result = await transport.run(['sh', '-c', 'echo out; echo err >&2; exit 3']);
      check(result.exitCode === 3, `exit code should be 3, got ${result.exitCode}`);
      check(result.stdout === 'out\n', `stdout: ${JSON.stringify(result.stdout)}`);
      check(result.stderr.endsWith('err\n'), `stderr: ${JSON.stringify(result.stderr)}`);
      check(typeof result.durationMs === 'number' && result.durationMs >= 0, 'durationMs');
    }),
    timeout,
  );

  test(
    'transport: environment variables are set for the command',
    withTransport(async (transport) => {
      const value = "a b 'c' $(d)";
      const result = await transport.run(['sh', '-c', 'printf %s "$YONDER_CONFORMANCE"'], {
        env: { YONDER_CONFORMANCE: value },
      });
      check(result.stdout === value, `env value was changed: ${JSON.stringify(result.stdout)}`);
    }),
    timeout,
  );

  test(
    'transport: a missing program is E_COMMAND_NOT_FOUND',
    withTransport(async (transport) => {
      await rejects(
        transport.run(['yonder-conformance-no-such-program']),
        'E_COMMAND_NOT_FOUND',
        'running a program that does not exist',
      );
    }),
    timeout,
  );

  test(
    'transport: the time limit ends a command with E_TIMEOUT',
    withTransport(async (transport) => {
      const started = Date.now();
      await rejects(
        transport.run(['sleep', '30'], { timeoutMs: 500 }),
        'E_TIMEOUT',
        'a command past its time limit',
      );
      check(Date.now() - started < 25_000, 'the time limit was not enforced');
    }),
    timeout,
  );

  test(
    'transport: output beyond the limit is counted, not kept',
    withTransport(async (transport) => {
      const result = await transport.run(
        ['sh', '-c', 'i=0; while [ $i -lt 2000 ]; do echo 0123456789; i=$((i+1)); done'],
        { maxOutputBytes: 1000 },
      );
      check(result.exitCode === 0, `exit ${result.exitCode}: ${result.stderr}`);
      check(result.stdoutTruncated, 'stdoutTruncated should be true');
      check(Buffer.byteLength(result.stdout) <= 1000, 'more than maxOutputBytes was kept');
    }),
    timeout,
  );

  test(
    'transport: an aborted signal ends the command',
    withTransport(async (transport) => {
      const controller = new AbortController();
      const started = Date.now();
      const running = transport.run(['sleep', '30'], { signal: controller.signal });
      setTimeout(() => controller.abort(), 200);
      let ended = false;
      try {
        await running;
        ended = true;
      } catch {
        ended = true;
      }
      check(ended && Date.now() - started < 25_000, 'the command ran on after the abort');
    }),
    timeout,
  );

  test(
    'transport: close is safe to call twice',
    async () => {
      const transport = await create();
      await transport.run(['true']);
      await transport.close();
      await transport.close();
    },
    timeout,
  );
}
