/** `yonder list --watch`: the listed jobs (and those submitted meanwhile) followed live — a table redrawn in place on a terminal, a line per change otherwise, NDJSON events with --json — until every one has ended, or Ctrl-C. */
import type { JobRecord, ListOptions } from '@yonder/core';
import { isTerminal } from '@yonder/core/backend-kit';
import type { CommandContext } from '../../command.js';
import { escapeControlCharacters } from '../../escape-control-characters.js';
import { formatJob } from '../../format-job.js';
import { jobJson, paintState } from '../../output.js';
import { type ListSelection, type ListShape, sinceAndLimit } from './list-selection.js';

/** Newest first, as `list` shows them. */
const newestFirst = (a: JobRecord, b: JobRecord): number =>
  a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0;

/**
 * A block of lines kept in place at the bottom of the terminal: each draw moves back up over
 * the last one and writes over it, never clearing the screen (a terminal, tmux among them, may
 * keep a cleared screen in its scrollback) and never writing more lines than the terminal has
 * (which would scroll a copy into the scrollback). Autowrap is off while drawing, so a line
 * wider than the terminal is cut, not wrapped onto a second row.
 */
function liveBlock(write: (text: string) => void) {
  let drawn = 0;
  const up = (): string => (drawn > 1 ? `\r\u001b[${drawn - 1}A` : '\r');
  return {
    draw(lines: readonly string[]): void {
      write(
        `\u001b[?7l${up()}${lines.map((line) => `${line}\u001b[K`).join('\n')}\u001b[J\u001b[?7h`,
      );
      drawn = lines.length;
    },
    /** Draw `lines` one last time, without the status line under them; the cursor ends below. */
    finish(lines: readonly string[]): void {
      this.draw(lines);
      write(lines.length > 0 ? '\n' : '');
      drawn = 0;
    },
  };
}

export async function watchList(
  { io, runtime }: CommandContext,
  selection: ListSelection,
  shape: ListShape,
): Promise<number> {
  const { manager } = runtime();
  const { jobTable } = await import('../../job-table.js');
  const terminal = Boolean(io.terminal) && shape.kind !== 'json';
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  process.once('SIGINT', stop);
  const block = liveBlock((text) => io.stdout(text));
  const options: ListOptions = {
    all: selection.all,
    refresh: selection.refresh,
    ...(selection.states ? { states: selection.states } : {}),
    ...(selection.profile ? { profile: selection.profile } : {}),
  };
  try {
    const { jobs } = await manager.list(options);
    let followed = new Map<string, JobRecord>(
      sinceAndLimit(jobs, selection).map((job) => [job.id, job]),
    );
    const wanted = (job: JobRecord): boolean =>
      (!selection.profile || job.profile.toLowerCase() === selection.profile.toLowerCase()) &&
      (selection.since === undefined || job.createdAt >= selection.since);
    /** A new job joins; with --limit, the oldest beyond the limit leave. */
    const admit = (job: JobRecord): void => {
      followed.set(job.id, job);
      if (selection.limit !== undefined && followed.size > selection.limit)
        followed = new Map(
          [...followed.values()]
            .sort(newestFirst)
            .slice(0, selection.limit)
            .map((kept) => [kept.id, kept]),
        );
    };
    /** One job as a line of its own (off a terminal, or -q / --format on one). */
    const line = (job: JobRecord): string =>
      shape.kind === 'format'
        ? formatJob(shape.format, job, io.color)
        : shape.kind === 'quiet'
          ? `${job.id}\n`
          : `${job.id} ${paintState(io, job.state)}\n`;
    const show = (type: string, job: JobRecord): void => {
      if (shape.kind === 'json') io.stdout(`${JSON.stringify({ type, job: jobJson(job) })}\n`);
      else if (!terminal) io.stdout(line(job));
    };
    /** What the terminal shows: the jobs, newest first, cut to the terminal's height. */
    const screen = (status: boolean): string[] => {
      const shown = [...followed.values()].sort(newestFirst);
      const body =
        shape.kind === 'table'
          ? shown.length > 0
            ? jobTable(io, shown).split('\n').slice(0, -1)
            : []
          : shown.flatMap((job) => line(job).split('\n').slice(0, -1));
      const rows = Math.max(2, io.rows?.() ?? 24);
      const fits = body.length + (status ? 1 : 0) <= rows;
      const lines = fits ? body : body.slice(0, rows - 1);
      const hidden = body.length - lines.length;
      const more = `… ${hidden} more not shown (the terminal is too short)`;
      const tail =
        hidden > 0
          ? status
            ? `${more}; watching, Ctrl-C to stop.`
            : more
          : status
            ? 'Watching; Ctrl-C to stop.'
            : '';
      return tail ? [...lines, tail] : lines;
    };
    for (const job of [...followed.values()].sort(newestFirst).reverse()) show('listed', job);
    if (terminal) block.draw(screen(true));
    const done = (): boolean => [...followed.values()].every((job) => isTerminal(job.state));
    if (!done()) {
      const warned = new Set<string>();
      const watch = manager.watch({ signal: controller.signal });
      for await (const event of watch) {
        if (event.type === 'poll-failed') {
          // Once per target and error: a warning under a live table breaks it into copies.
          const key = `${event.target}\0${event.error.code}`;
          if (warned.has(key)) continue;
          warned.add(key);
          const profiles = [
            ...new Set(event.jobIds.map((id) => followed.get(id)?.profile).filter(Boolean)),
          ];
          const named =
            profiles.length > 0
              ? `profile ${profiles.map((p) => JSON.stringify(p)).join(', ')} at `
              : '';
          if (terminal) block.finish([]);
          io.stderr(
            escapeControlCharacters(
              `yonder: warning: cannot poll ${named}${event.target ?? 'the targets'}: ${event.error.code}: ${event.error.message}`,
            ) + '\n',
          );
          if (terminal) block.draw(screen(true));
          continue;
        }
        if (event.type === 'removed') {
          if (followed.delete(event.id) && shape.kind === 'json')
            io.stdout(`${JSON.stringify({ type: 'removed', id: event.id })}\n`);
        } else if (
          event.type === 'created' ||
          event.type === 'state-changed' ||
          event.type === 'updated'
        ) {
          if (!followed.has(event.job.id)) {
            if (event.type !== 'created' || !wanted(event.job)) continue;
            admit(event.job);
            if (!followed.has(event.job.id)) continue;
          }
          const before = followed.get(event.job.id);
          followed.set(event.job.id, event.job);
          if (event.type !== 'updated' || before?.state !== event.job.state)
            show(event.type, event.job);
        } else continue;
        if (terminal) block.draw(screen(true));
        if (done()) break;
      }
      watch.close();
    }
    // The last picture stays, without the status line.
    if (terminal) block.finish(screen(false));
    return controller.signal.aborted ? 130 : 0;
  } finally {
    process.off('SIGINT', stop);
  }
}
