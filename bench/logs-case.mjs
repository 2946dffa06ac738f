/** The logs case of `pnpm bench`: `yonder logs ID --follow --all` of a job that wrote 1 GB, locally against `cat` and over ssh (the openssh and ssh2 transports) against `ssh HOST cat`, with peak RSS. */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** A file copied to stdout by Node at its plainest: what no Node program streaming a log can beat. */
const NODE_COPY =
  "const fs=require('fs');const fd=fs.openSync(process.argv[1],'r');const b=Buffer.allocUnsafe(128<<10);let n;while((n=fs.readSync(fd,b,0,b.length,null))>0){let w=0;while(w<n)w+=fs.writeSync(1,b,w,n-w)}";

/**
 * Logs: `yonder logs ID --follow --all` of a job that wrote `bytes` (1 GiB by default),
 * piped into `cat > /dev/null`, against `cat` of the same file into the same sink locally, and
 * over SSH (each transport in turn) against `ssh HOST cat` (`sshArgs`: OpenSSH, no master).
 * Peak RSS is yonder's own (`/usr/bin/time`), throughput the ratio of the two wall times; the
 * bytes are checked with `cmp` every time. `pipeline(script, env, rssFile)` runs one pipeline.
 */
export function logsCase({
  bin,
  bytes,
  sshArgs,
  repeats: asked,
  median,
  ms,
  pipeline,
  record,
  say,
}) {
  const repeats = Math.min(asked, 3);
  const size =
    bytes >= 1024 ** 3
      ? `${(bytes / 1024 ** 3).toFixed(2)} GiB`
      : `${(bytes / 1024 ** 2).toFixed(0)} MiB`;
  say(`\nLogs: following a job that wrote ${size} (median of ${repeats})`);
  const state = mkdtempSync(join(tmpdir(), 'yonder-bench-logs-'));
  // The openssh transport's ControlPath lives here: short, as a socket path must be.
  const runtime = mkdtempSync(join(tmpdir(), 'yb-'));
  const source = join(state, 'source.bin');
  execFileSync('sh', ['-c', `head -c ${bytes} /dev/urandom > "$1"; chmod 644 "$1"`, 'sh', source]);
  chmodSync(state, 0o755);
  const rss = join(state, 'rss');
  const yonderEnv = {
    YONDER_STATE_DIR: join(state, 'ledger'),
    YONDER_CONFIG: '',
    XDG_CONFIG_HOME: state,
    XDG_RUNTIME_DIR: runtime,
  };
  const cli = (...args) =>
    execFileSync('node', [bin, ...args], {
      encoding: 'utf8',
      env: { ...process.env, ...yonderEnv },
    }).trim();
  const config = sshArgs[sshArgs.indexOf('-F') + 1];
  const host = sshArgs.at(-1);
  for (const transport of ['openssh', 'ssh2']) {
    const flags = { backend: 'ssh', host, 'ssh-config': config, transport };
    cli('profile', 'add', transport, ...Object.entries(flags).flatMap(([k, v]) => [`--${k}`, v]));
  }
  const overSsh = (log) => `ssh ${sshArgs.join(' ')} cat ${log} | cat > /dev/null`;
  const cases = [
    {
      name: 'local',
      profile: 'local',
      baselineName: 'cat',
      baseline: (log) => `cat ${log} | cat > /dev/null`,
    },
    { name: 'ssh (openssh)', profile: 'openssh', baselineName: 'ssh cat', baseline: overSsh },
    { name: 'ssh (ssh2)', profile: 'ssh2', baselineName: 'ssh cat', baseline: overSsh },
  ];
  try {
    for (const entry of cases) {
      const id = cli('submit', '--profile', entry.profile, '--', 'cat', source);
      spawnSync('node', [bin, 'wait', id, '--timeout', '3600'], {
        env: { ...process.env, ...yonderEnv },
        stdio: 'ignore',
      });
      const log = JSON.parse(cli('status', id, '--json')).result[0].data.log;
      const follow = [];
      const baseline = [];
      const floor = [];
      let peakKb = 0;
      for (let repeat = 0; repeat < repeats; repeat += 1) {
        const run = pipeline(
          `/usr/bin/time -f %M -o ${rss} node ${bin} logs ${id} --follow --all 2>/dev/null | cat > /dev/null`,
          yonderEnv,
          rss,
        );
        follow.push(run.ms);
        peakKb = Math.max(peakKb, run.peakKb);
        baseline.push(pipeline(entry.baseline(log), {}).ms);
        // The floor for any Node program: a loop of readSync and writeSync, 128 KiB at a time (as cat).
        if (entry.profile === 'local')
          floor.push(
            pipeline(`node -e ${JSON.stringify(NODE_COPY)} ${log} | cat > /dev/null`, {}).ms,
          );
      }
      const same = spawnSync('bash', ['-c', `cmp <(node ${bin} logs ${id} --all) ${source}`], {
        env: { ...process.env, ...yonderEnv },
      });
      if (entry.profile !== 'local') spawnSync('ssh', [...sshArgs, 'rm', '-rf', dirname(log)]);
      const yonderMs = median(follow);
      const baselineMs = median(baseline);
      const rate = (time) => (bytes / 1024 ** 2 / (time / 1000)).toFixed(0);
      record({
        case: `follow ${entry.name}, ${size}`,
        yonderMs,
        baselineName: entry.baselineName,
        baselineMs,
        peakKb,
        throughputRatio: baselineMs / yonderMs,
        extra: `${floor.length > 0 ? `node copy loop ${ms(median(floor))} (yonder ${(median(floor) / yonderMs).toFixed(2)}× it), ` : ''}throughput ${(baselineMs / yonderMs).toFixed(2)}×, peak RSS ${(peakKb / 1024).toFixed(1)} MiB, ${rate(yonderMs)} MiB/s against ${rate(baselineMs)} MiB/s, bytes ${same.status === 0 ? 'identical (cmp)' : 'DIFFER'}`,
      });
    }
    cli('disconnect', 'openssh');
  } finally {
    rmSync(state, { recursive: true, force: true });
    rmSync(runtime, { recursive: true, force: true });
  }
}
