/** The benchmarks' ledger fixture: N finished jobs written in the file store's layout directly. */
import { existsSync, mkdirSync, mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sampleJob } from '../packages/core/dist/conformance/index.js';

/**
 * A ledger with `count` finished jobs, written in the file store's layout directly, each file
 * dated when its job was made (as a ledger that grew over time is: nothing in it just written).
 */
export function ledger(count) {
  const state = mkdtempSync(join(tmpdir(), `yonder-ledger-${count}-`));
  mkdirSync(join(state, 'jobs'), { recursive: true });
  mkdirSync(join(state, 'active'));
  let index = '';
  const shards = new Map();
  for (let n = 0; n < count; n += 1) {
    // Spread over the 256 shards as real (random) ids are, and unique.
    const id = `${((n * 2654435761) >>> 0).toString(16).padStart(8, '0')}${n.toString(16).padStart(8, '0')}`;
    const job = sampleJob({
      id,
      state: 'succeeded',
      exitCode: 0,
      createdAt: new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString(),
    });
    const shard = join(state, 'jobs', id.slice(0, 2));
    if (!existsSync(shard)) mkdirSync(shard);
    const path = join(shard, `${id}.json`);
    writeFileSync(path, `${JSON.stringify(job)}\n`);
    const made = new Date(job.createdAt);
    utimesSync(path, made, made);
    shards.set(shard, made);
    index += `\n${job.createdAt}\t${id}\n`;
  }
  writeFileSync(join(state, 'index.log'), index);
  for (const [shard, made] of shards) utimesSync(shard, made, made);
  return state;
}
