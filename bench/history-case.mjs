/** The history case of `pnpm bench`: `list --all` (table and `--json`) of a large ledger beside `cat` of its index and of every record, with peak RSS; the first listing (which builds the listing index) apart. */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ledger } from './ledger.mjs';

/**
 * History at scale: `yonder list --all` (the table, and `--json`) of a ledger of N finished
 * jobs, beside `cat` of its index (the least any listing reads) and `cat` of every record
 * (what reading every job costs before any parsing), with yonder's peak RSS. The ledger is
 * written as an older yonder left it, without a listing index: the first listing builds it
 * (measured once, apart), as the first `list --all` after an upgrade does; the rest use it.
 */
export function historyCase({ bin, repeats, median, ms, pipeline, record, say, sizes }) {
  say('\nHistory: list --all of N finished jobs, against cat of the index and of every record');
  for (const size of sizes) {
    const state = ledger(size);
    const env = { YONDER_STATE_DIR: state, YONDER_CONFIG: '', XDG_CONFIG_HOME: state };
    const rss = join(state, 'rss');
    const repeat = (script, withRss) => {
      const runs = [];
      for (let n = 0; n < repeats; n += 1) runs.push(pipeline(script, env, withRss ? rss : ''));
      return {
        ms: median(runs.map((run) => run.ms)),
        peakKb: Math.max(...runs.map((run) => run.peakKb)),
      };
    };
    const list = (flags) =>
      `/usr/bin/time -f %M -o ${rss} node ${bin} list --all --no-refresh${flags} > /dev/null`;
    const first = pipeline(list(''), env, rss);
    say(
      `  first list --all, ${size} jobs (builds the listing index): ${ms(first.ms)}, peak memory ${(first.peakKb / 1024).toFixed(1)} MiB`,
    );
    const index = repeat(`cat ${state}/index.log > /dev/null`, false);
    const records = repeat(
      `find ${state}/jobs -name '*.json' -print0 | xargs -0 cat > /dev/null`,
      false,
    );
    for (const flags of ['', ' --json']) {
      const figures = repeat(list(flags), true);
      record({
        case: `list --all${flags}, ${size} jobs`,
        yonderMs: figures.ms,
        baselineName: 'cat every record',
        baselineMs: records.ms,
        peakKb: figures.peakKb,
        extra: `cat index.log ${ms(index.ms)}   peak memory ${(figures.peakKb / 1024).toFixed(1)} MiB`,
      });
    }
    rmSync(state, { recursive: true, force: true });
  }
}
