/** `yonder wait`: refresh until the jobs have ended, saying which targets cannot be polled; the exit status is the outcome. */

import type { JobRecord } from '@yonder/core';
import { isTerminal } from '@yonder/core/backend-kit';
import { durationOption, numberOption, parse } from '../../args.js';
import type { Command } from '../../command.js';
import { envelope, type Io, jobJson, paintState, unreachableText } from '../../output.js';
import type { Runtime } from '../../runtime.js';
import { UsageError } from '../../usage-error.js';

const HELP = `Usage: yonder wait JOB... [--timeout SECONDS] [--give-up-after DURATION] [--json]

Wait until every job has finished, then print each job's outcome. While waiting, a terminal
shows one progress line on stderr (a line per change of state when stderr is not a terminal).
A target whose jobs cannot be polled is said so on stderr, once (its profile, the target, the
error, since when).

  --timeout SECONDS          stop waiting after this long (exit 124)
  --give-up-after DURATION   stop waiting once a target has failed every poll for this long
                             (90s, 15m, 1h; exit 69)

Exit status: 0 if every job succeeded; the job's exit code if a single job failed with one;
124 if the timeout passed first; 69 if a target stayed unreachable for --give-up-after; 130 after
Ctrl-C (the states so far are printed); 1 otherwise.
`;

/** `wait --give-up-after`: a target stayed unreachable that long (sysexits' EX_UNAVAILABLE). */
export const UNREACHABLE_STATUS = 69;

/** How long, as the progress line says it: `45s`, `3m 05s`, `1h 02m`. */
function elapsed(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600)
    return `${Math.floor(seconds / 60)}m ${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(seconds / 3600)}h ${String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')}m`;
}

/**
 * What a person sees while waiting: on a terminal, one line on stderr rewritten in place (how
 * many jobs have ended, for how long, Ctrl-C), erased before the results; elsewhere (a log
 * file) a line per change of state.
 */
function progress(io: Io, count: number) {
  const ended = new Set<string>();
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  let drawn = false;
  const draw = (): void => {
    io.stderr(
      `\r\u001b[Kyonder: waiting for ${count - ended.size} of ${count} job${count > 1 ? 's' : ''} (${elapsed(performance.now() - started)}; Ctrl-C to stop)`,
    );
    drawn = true;
  };
  if (io.stderrTerminal) {
    draw();
    timer = setInterval(draw, 1000);
    timer.unref();
  }
  return {
    change(job: JobRecord): void {
      if (isTerminal(job.state)) ended.add(job.id);
      if (io.stderrTerminal) draw();
      else
        io.stderr(
          `${job.id} ${paintState(io, job.state)}${job.reason ? ` (${job.reason})` : ''}\n`,
        );
    },
    /** Interrupt the line: a warning or the results follow on a line of their own. */
    clear(): void {
      if (drawn) io.stderr('\r\u001b[K');
      drawn = false;
    },
    stop(): void {
      clearInterval(timer);
      this.clear();
    },
  };
}

export const run: Command = async (argv, { io, runtime }) => {
  const { values, positionals } = parse(
    argv,
    { timeout: { type: 'string' }, 'give-up-after': { type: 'string' }, json: { type: 'boolean' } },
    'wait',
  );
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError('Name at least one job: yonder wait JOB...');
  const timeout = numberOption(values.timeout, 'timeout');
  const giveUpAfterMs = durationOption(values['give-up-after'], 'give-up-after');
  const interrupted = new AbortController();
  const stop = (): void => interrupted.abort();
  process.once('SIGINT', stop);
  const shown = progress(io, new Set(positionals).size);
  let outcome: Awaited<ReturnType<Runtime['manager']['wait']>>;
  try {
    outcome = await runtime().manager.wait(positionals, {
      ...(timeout === undefined ? {} : { timeoutMs: timeout * 1000 }),
      ...(giveUpAfterMs === undefined ? {} : { giveUpAfterMs }),
      signal: interrupted.signal,
      onUnreachable: (failure) => {
        shown.clear();
        io.stderr(`${unreachableText(failure)}\n`);
      },
      onChange: (job) => shown.change(job),
    });
  } finally {
    shown.stop();
    process.removeListener('SIGINT', stop);
  }
  const { jobs, timedOut, gaveUp } = outcome;
  if (values.json) {
    io.stdout(envelope({ timedOut, gaveUp, jobs: jobs.map(jobJson) }));
  } else {
    for (const job of jobs) {
      const detail = job.exitCode !== null ? ` exit ${job.exitCode}` : '';
      // The reason, unless it only repeats the exit code just shown.
      const reason =
        job.reason && job.state !== 'succeeded' && !(detail && /^exit code \d+$/.test(job.reason))
          ? ` (${job.reason})`
          : '';
      io.stdout(`${job.id} ${paintState(io, job.state)}${detail}${reason}\n`);
    }
  }
  if (gaveUp) {
    if (!values.json)
      io.stderr(
        `yonder: gave up: profile ${gaveUp.profiles.map((p) => JSON.stringify(p)).join(', ')} at ${gaveUp.target} has not answered since ${gaveUp.since} (--give-up-after ${values['give-up-after']})\n`,
      );
    return UNREACHABLE_STATUS;
  }
  if (interrupted.signal.aborted && timedOut) return 130;
  if (timedOut) {
    if (!values.json) io.stderr(`yonder: timed out after ${timeout}s\n`);
    return 124;
  }
  if (jobs.every((job) => job.state === 'succeeded')) return 0;
  const only = jobs[0];
  if (
    jobs.length === 1 &&
    only &&
    only.state === 'failed' &&
    only.exitCode !== null &&
    only.exitCode > 0
  ) {
    return only.exitCode & 0xff || 1;
  }
  return 1;
};
