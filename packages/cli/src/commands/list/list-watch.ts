/** `yonder list --watch`: the listed jobs (and those submitted meanwhile) followed live — a table redrawn in place on a terminal, a line per change otherwise, NDJSON events with --json — until every one has ended, or Ctrl-C. */
import type { JobRecord, ListOptions } from '@yonder/core';
import { isTerminal } from '@yonder/core/backend-kit';
import type { CommandContext } from '../../command.js';
import { jobJson, paintState } from '../../output.js';

/** Clear the screen and go home, as `watch(1)` redraws. */
const REDRAW = '\u001b[H\u001b[2J';

export async function watchList(
  { io, runtime }: CommandContext,
  options: ListOptions,
  json: boolean,
  terminal: boolean,
): Promise<number> {
  const { manager } = runtime();
  const { jobTable } = await import('../../job-table.js');
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  process.once('SIGINT', stop);
  try {
    const { jobs } = await manager.list(options);
    const followed = new Map<string, JobRecord>(jobs.map((job) => [job.id, job]));
    const wanted = (job: JobRecord): boolean =>
      !options.profile || job.profile.toLowerCase() === options.profile.toLowerCase();
    const show = (type: string, job: JobRecord): void => {
      if (json) io.stdout(`${JSON.stringify({ type, job: jobJson(job) })}\n`);
      else if (!terminal) io.stdout(`${job.id} ${paintState(io, job.state)}\n`);
    };
    const redraw = (): void => {
      if (terminal && !json)
        io.stdout(`${REDRAW}${jobTable(io, [...followed.values()])}\nWatching; Ctrl-C to stop.\n`);
    };
    for (const job of followed.values()) show('listed', job);
    redraw();
    const done = (): boolean => [...followed.values()].every((job) => isTerminal(job.state));
    if (done()) return 0;
    const watch = manager.watch({ signal: controller.signal });
    for await (const event of watch) {
      if (event.type === 'poll-failed') {
        io.stderr(
          `yonder: warning: cannot poll ${event.target ?? 'the targets'}: ${event.error.code}: ${event.error.message}\n`,
        );
        continue;
      }
      if (event.type === 'removed') {
        if (followed.delete(event.id) && json)
          io.stdout(`${JSON.stringify({ type: 'removed', id: event.id })}\n`);
      } else if (
        event.type === 'created' ||
        event.type === 'state-changed' ||
        event.type === 'updated'
      ) {
        if (!followed.has(event.job.id) && (event.type !== 'created' || !wanted(event.job)))
          continue;
        const before = followed.get(event.job.id);
        followed.set(event.job.id, event.job);
        if (event.type !== 'updated' || before?.state !== event.job.state)
          show(event.type, event.job);
      } else continue;
      redraw();
      if (done()) break;
    }
    watch.close();
    return controller.signal.aborted ? 130 : 0;
  } finally {
    process.off('SIGINT', stop);
  }
}
