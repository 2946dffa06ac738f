/** `yonder list --all` from the store's listing: every job without holding or parsing every record, written a piece at a time as stdout takes it. */
import type { JobRecord, StoreProblemV1 } from '@yonder/core';
import { isWaiting, type ListingEntryV1, type ListingV1 } from '@yonder/core/backend-kit';
import type { CommandContext } from '../../command.js';
import { formatJob } from '../../format-job.js';
import { warnUnreachable } from '../../output.js';
import { type ListSelection, type ListShape, sinceAndLimit } from './list-selection.js';

/** Write this much at a time: a piece of output, not the whole listing, is held. */
const PIECE_BYTES = 1024 * 1024;
const COMMA = Buffer.from(',');

/**
 * Gathers output in one buffer and writes it a piece at a time, each once stdout has taken the
 * last (backpressure): `add` copies (an entry's JSON may be a view its listing reuses) and says
 * when the piece is full; `flush` writes it, and the buffer is used again.
 */
function createPieceWriter(context: CommandContext) {
  const { io } = context;
  let piece = Buffer.allocUnsafe(PIECE_BYTES);
  let size = 0;
  const flush = async (): Promise<void> => {
    if (size === 0) return;
    const data = piece.subarray(0, size);
    size = 0;
    // `io.write` is done with the bytes once it resolves; a plain `stdout` may keep them.
    if (io.write) await io.write(data);
    else io.stdout(Buffer.from(data));
  };
  return {
    closed: (): boolean => io.closed?.aborted ?? false,
    /** Add to the piece; true when it is full enough to be written. */
    add(data: string | Uint8Array): boolean {
      const length = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
      if (size + length > piece.length) {
        const grown = Buffer.allocUnsafe(Math.max(piece.length, size + length));
        piece.copy(grown, 0, 0, size);
        piece = grown;
      }
      if (typeof data === 'string') size += piece.write(data, size);
      else {
        piece.set(data, size);
        size += length;
      }
      return size >= PIECE_BYTES / 2;
    },
    flush,
  };
}

/** The entries a selection keeps: its states, its profile, created since, at most `limit`. */
function select(listing: ListingV1, selection: ListSelection): ListingEntryV1[] {
  const profile = selection.profile?.toLowerCase();
  const kept = listing.entries.filter(
    (entry) =>
      (!selection.states || selection.states.includes(entry.state)) &&
      (profile === undefined || entry.profile.toLowerCase() === profile),
  );
  return sinceAndLimit(kept, selection);
}

/**
 * List every job from `store.listing()`: refreshed first (and past retention forgotten) unless
 * told not to, warnings on stderr,
 * then the table, the JSON document (the same bytes `envelope(jobs.map(jobJson))` makes), a
 * template's lines or the ids, written as stdout takes them. A closed stdout ends it quietly.
 */
export async function listAll(
  context: CommandContext,
  selection: ListSelection,
  shape: ListShape,
): Promise<number> {
  const { io, runtime } = context;
  const { manager } = runtime();
  const store = manager.store;
  const problems: StoreProblemV1[] = [];
  if (selection.refresh) {
    problems.push(...(await manager.refresh()).problems);
    problems.push(...(await manager.applyRetention()));
  }
  const listing = await (store.listing as NonNullable<typeof store.listing>).call(store, {
    ...(selection.since === undefined ? {} : { since: selection.since }),
    json: shape.kind === 'json' || shape.kind === 'format',
  });
  try {
    for (const problem of [...problems, ...listing.problems])
      io.stderr(`yonder: warning: ${problem.message}\n`);
    const entries = select(listing, selection);
    const active = (await store.listJobs({ activeOnly: true })).jobs;
    const activeIds = new Set(active.map((job) => job.id));
    const shown = new Set<string>();
    // The few active jobs looked for among the many shown, not every id shown put in a set.
    if (activeIds.size > 0)
      for (const entry of entries) if (activeIds.has(entry.id)) shown.add(entry.id);
    warnUnreachable(io, manager.failingTargets(active.filter((job) => shown.has(job.id))));
    if (selection.profile && entries.length === 0)
      await manager
        .profile(selection.profile)
        .catch((error: Error) => io.stderr(`yonder: warning: ${error.message}\n`));
    const out = createPieceWriter(context);
    if (shape.kind === 'table') {
      if (entries.length === 0) {
        io.stderr('No jobs. Submit one with: yonder submit -- COMMAND\n');
        return 0;
      }
      const { jobTablePieces } = await import('../../job-table.js');
      // An active job shown from its record: a job waiting for its parents says `waiting`.
      const waiting = new Map(active.filter(isWaiting).map((job) => [job.id, job]));
      const rows =
        waiting.size === 0 ? entries : entries.map((entry) => waiting.get(entry.id) ?? entry);
      for (const piece of jobTablePieces(io, rows)) {
        if (out.closed()) return 0;
        if (out.add(piece)) await out.flush();
      }
    } else if (shape.kind === 'json') {
      out.add('{"ok":true,"result":[');
      for (let n = 0; n < entries.length && !out.closed(); n += 1) {
        if (n > 0) out.add(COMMA);
        if (out.add((entries[n] as ListingEntryV1).json())) await out.flush();
      }
      out.add(']}\n');
    } else {
      for (const entry of entries) {
        if (out.closed()) return 0;
        const job =
          shape.kind === 'format'
            ? (JSON.parse(Buffer.from(entry.json()).toString('utf8')) as JobRecord)
            : undefined;
        const line =
          job && shape.kind === 'format' ? formatJob(shape.format, job, io.color) : `${entry.id}\n`;
        if (out.add(line)) await out.flush();
      }
    }
    await out.flush();
    return 0;
  } finally {
    listing.close();
  }
}
