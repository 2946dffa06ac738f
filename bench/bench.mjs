// yonder's benchmarks: every case prints yonder's figures beside a baseline measured in the
// same run, and their ratio; results also go to bench-results/results.json.
// Run with `pnpm bench` (as root: it starts the Slurm test cluster and the sshd test hosts).
import { execFileSync, spawnSync } from 'node:child_process';
import {
  closeSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSlurmBackend } from '../packages/backend-slurm/dist/index.js';
import { createSshTransport } from '../packages/backend-ssh/dist/index.js';
import { createRegistry, JobManager } from '../packages/core/dist/index.js';
import { createFsStore } from '../packages/store-fs/dist/index.js';
import { historyCase } from './history-case.mjs';
import { ledger } from './ledger.mjs';
import { logsCase } from './logs-case.mjs';
import { opensshCase } from './openssh-bench.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const BIN = join(ROOT, 'packages/cli/dist/bin.js');
const { env } = process;
const REPEATS = Number(env.YONDER_BENCH_REPEATS ?? 5);
const SIZES = (env.YONDER_BENCH_SIZES ?? '1,10,100,1000').split(',').map(Number);
const LEDGER_SIZES = (env.YONDER_BENCH_LEDGER ?? '0,10000,100000').split(',').map(Number);
const HISTORY_SIZES = (env.YONDER_BENCH_HISTORY ?? '100000').split(',').map(Number);
const LOCK = '/tmp/yonder-bench.lock';
const results = [];

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const ms = (value) => (value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${value.toFixed(1)} ms`);
const now = () => performance.now();
function say(text) {
  process.stdout.write(`${text}\n`);
}
function record(entry) {
  results.push(entry);
  const ratio = entry.baselineMs / entry.yonderMs;
  say(
    `  ${entry.case.padEnd(34)} yonder ${ms(entry.yonderMs).padStart(10)}   ${entry.baselineName} ${ms(entry.baselineMs).padStart(10)}   ratio ${ratio >= 1 ? `${ratio.toFixed(1)}× faster` : `${(1 / ratio).toFixed(2)}× slower`}${entry.extra ? `   ${entry.extra}` : ''}`,
  );
}

function services() {
  if (process.getuid?.() !== 0)
    throw new Error(
      'pnpm bench runs as root: it starts the Slurm test cluster and the sshd test hosts.',
    );
  execFileSync('bash', [join(ROOT, 'scripts/slurm-cluster.sh'), 'start'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, YONDER_SLURM_QUIET: '1' },
  });
  execFileSync('bash', [join(ROOT, 'scripts/sshd-hosts.sh'), 'start'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, YONDER_SSH_QUIET: '1' },
  });
  const env = execFileSync('bash', [join(ROOT, 'scripts/sshd-hosts.sh'), 'env'], {
    encoding: 'utf8',
  });
  return /export YONDER_SSH_CONFIG='([^']+)'/.exec(env)[1];
}

function slurmOverSsh() {
  const state = mkdtempSync(join(tmpdir(), 'yonder-bench-'));
  const transports = [];
  const registry = createRegistry({
    backends: [createSlurmBackend()],
    transports: {
      ssh: (profile) => {
        const transport = createSshTransport({
          profile,
          env: { ...process.env, SSH_AUTH_SOCK: '' },
        });
        const counted = {
          specificationVersion: 'v1',
          id: 'ssh',
          target: transport.target,
          commands: 0,
          get handshakes() {
            return transport.handshakes;
          },
          run(argv, options) {
            counted.commands += 1;
            return transport.run(argv, options);
          },
          runScript(script, args, options) {
            counted.commands += 1;
            return transport.runScript(script, args, options);
          },
          close: () => transport.close(),
        };
        transports.push(counted);
        return counted;
      },
    },
  });
  const manager = new JobManager({
    store: createFsStore({ location: state }),
    registry,
    stateDirectory: state,
    minPollIntervalMs: 0,
  });
  return { manager, transports, state, registry };
}

const sshArgs = (sshConfig) => [
  '-F',
  sshConfig,
  '-o',
  'ControlMaster=no',
  '-o',
  'ControlPath=none',
  'target',
];

async function pollCase(sshConfig) {
  say('\nPoll: N held Slurm jobs reached over SSH (one poll cycle)');
  const { manager, state } = slurmOverSsh();
  await manager.saveProfile({
    name: 'hpc',
    backend: 'slurm',
    host: 'target',
    ssh: { config: sshConfig },
  });
  let submitted = [];
  for (const size of SIZES) {
    while (submitted.length < size) {
      const batch = Math.min(16, size - submitted.length);
      const jobs = await Promise.all(
        Array.from({ length: batch }, () =>
          manager.submit({ argv: ['true'], schedulerOptions: ['--hold'] }, { profile: 'hpc' }),
        ),
      );
      submitted = submitted.concat(jobs);
    }
    // yonder, cold: a new process's manager, so the poll includes the SSH handshake.
    const cold = [];
    let commands = 0;
    let handshakes = 0;
    for (let repeat = 0; repeat < REPEATS; repeat += 1) {
      const fresh = slurmOverSsh();
      const freshManager = new JobManager({
        store: createFsStore({ location: state }),
        registry: fresh.registry,
        stateDirectory: state,
        minPollIntervalMs: 0,
      });
      const started = now();
      await freshManager.refresh({ force: true });
      cold.push(now() - started);
      commands = fresh.transports.reduce((sum, transport) => sum + transport.commands, 0);
      handshakes = fresh.transports.reduce((sum, transport) => sum + transport.handshakes, 0);
      await freshManager.close();
      await fresh.manager.close();
    }
    // Baseline: the seed's way, one ssh process per job running squeue (sacct when empty).
    const ids = submitted.map((job) => job.externalId);
    const baselineRepeats = size >= 1000 ? 1 : Math.min(3, REPEATS);
    const baseline = [];
    for (let repeat = 0; repeat < baselineRepeats; repeat += 1) {
      const started = now();
      for (const id of ids) {
        const queue = spawnSync('ssh', [...sshArgs(sshConfig), `squeue -h -j ${id} -o %T`], {
          encoding: 'utf8',
        });
        if (!queue.stdout.trim())
          spawnSync('ssh', [
            ...sshArgs(sshConfig),
            `sacct -n -X -j ${id} --format=State,ExitCode --parsable2`,
          ]);
      }
      baseline.push(now() - started);
    }
    // The limit: one local squeue and one sacct for all N.
    const limit = [];
    for (let repeat = 0; repeat < REPEATS; repeat += 1) {
      const started = now();
      execFileSync(
        'squeue',
        [
          '--user=yonder-test',
          '--all',
          '--noheader',
          '--array',
          '--states=all',
          '--format=%A|%i|%T|%j|%k|%r',
        ],
        { stdio: 'ignore' },
      );
      execFileSync(
        'sacct',
        [
          '--noheader',
          '--parsable2',
          '--allocations',
          '--starttime=now-1days',
          '--endtime=now',
          `--jobs=${ids.join(',')}`,
          '--format=JobIDRaw,JobID,JobName,State,ExitCode,Comment',
        ],
        { stdio: 'ignore' },
      );
      limit.push(now() - started);
    }
    const yonderMs = median(cold);
    record({
      case: `poll N=${size}`,
      yonderMs,
      baselineName: 'ssh per job',
      baselineMs: median(baseline),
      limitMs: median(limit),
      remoteCommands: commands,
      handshakes,
      extra: `remote commands ${commands}, handshakes ${handshakes}, local limit ${ms(median(limit))} (${(yonderMs / median(limit)).toFixed(2)}× it)`,
    });
  }
  execFileSync('scancel', ['--user=yonder-test']);
  await manager.close();
}

async function submitCase(sshConfig) {
  say('\nSubmit: 100 held jobs over SSH');
  const { manager } = slurmOverSsh();
  await manager.saveProfile({
    name: 'hpc',
    backend: 'slurm',
    host: 'target',
    ssh: { config: sshConfig },
  });
  await manager.submit({ argv: ['true'], schedulerOptions: ['--hold'] }, { profile: 'hpc' }); // connection and probe
  const count = 100;
  let started = now();
  for (let index = 0; index < count; index += 1)
    await manager.submit({ argv: ['true'], schedulerOptions: ['--hold'] }, { profile: 'hpc' });
  const yonderMs = now() - started;
  started = now();
  for (let index = 0; index < count; index += 1) {
    spawnSync(
      'ssh',
      [
        ...sshArgs(sshConfig),
        'sbatch --parsable --hold --job-name=baseline --output=/dev/null --wrap true',
      ],
      { encoding: 'utf8' },
    );
  }
  const baselineMs = now() - started;
  started = now();
  for (let index = 0; index < count; index += 1) {
    execFileSync(
      'sbatch',
      ['--parsable', '--hold', '--job-name=limit', '--output=/dev/null', '--wrap', 'true'],
      { stdio: 'ignore' },
    );
  }
  const limitMs = now() - started;
  started = now();
  await manager.submitMany(
    Array.from({ length: count }, () => ({ argv: ['true'], schedulerOptions: ['--hold'] })),
    { profile: 'hpc' },
  );
  const batchMs = now() - started;
  record({
    case: `submit ${count} jobs, one by one`,
    yonderMs,
    baselineName: 'ssh per job',
    baselineMs,
    limitMs,
    extra: `local sbatch loop ${ms(limitMs)} (${(yonderMs / limitMs).toFixed(2)}× it)`,
  });
  record({
    case: `submit ${count} jobs, one batch`,
    yonderMs: batchMs,
    baselineName: 'ssh per job',
    baselineMs,
    limitMs,
    extra: `local sbatch loop ${ms(limitMs)} (${(batchMs / limitMs).toFixed(2)}× it)`,
  });
  execFileSync('scancel', ['--user=yonder-test']);
  execFileSync('scancel', ['--user=root', '--name=limit']);
  await manager.close();
}

/** Median wall time and peak RSS of a CLI command. */
function measure(args, env, repeats = REPEATS) {
  const times = [];
  const peaks = [];
  for (let repeat = 0; repeat < repeats; repeat += 1) {
    const started = now();
    const result = spawnSync('/usr/bin/time', ['-f', '%M', ...args], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1', ...env },
    });
    times.push(now() - started);
    peaks.push(Number(result.stderr.trim().split('\n').at(-1)));
  }
  return { ms: median(times), peakKb: Math.max(...peaks) };
}

function ledgerCase() {
  say('\nLedger: list and submit on the local backend with N jobs of history');
  const base = {};
  for (const size of LEDGER_SIZES) {
    const state = ledger(size);
    const env = { YONDER_STATE_DIR: state, YONDER_CONFIG: '', XDG_CONFIG_HOME: state };
    const list = measure(['node', BIN, 'list'], env);
    const submit = measure(['node', BIN, 'submit', '--', 'true'], env);
    base.list ??= list;
    base.submit ??= submit;
    for (const [name, figures] of [
      ['list', list],
      ['submit', submit],
    ]) {
      record({
        case: `${name}, ${size} jobs of history`,
        yonderMs: figures.ms,
        baselineName: 'same, empty ledger',
        baselineMs: base[name].ms,
        peakKb: figures.peakKb,
        extra: `peak memory ${(figures.peakKb / 1024).toFixed(1)} MiB`,
      });
    }
    rmSync(state, { recursive: true, force: true });
  }
}

/** Wall time of a shell pipeline and the peak RSS (KiB) `/usr/bin/time` wrote to `rssFile`. */
function pipeline(script, env, rssFile) {
  const started = now();
  const result = spawnSync('bash', ['-o', 'pipefail', '-c', script], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const ms = now() - started;
  if (result.status !== 0) throw new Error(`${script} failed (${result.status}): ${result.stderr}`);
  return {
    ms,
    peakKb: rssFile ? Number(readFileSync(rssFile, 'utf8').trim().split('\n').at(-1)) : 0,
  };
}

function startCase() {
  say('\nStart: the CLI against `node -e 0`');
  const state = mkdtempSync(join(tmpdir(), 'yonder-start-'));
  const env = { YONDER_STATE_DIR: state, YONDER_CONFIG: '', XDG_CONFIG_HOME: state };
  const node = measure(['node', '-e', '0'], env, 10);
  for (const args of [['--version'], ['list']]) {
    const figures = measure(['node', BIN, ...args], env, 10);
    record({
      case: `yonder ${args.join(' ')}`,
      yonderMs: figures.ms,
      baselineName: 'node -e 0',
      baselineMs: node.ms,
      extra: `${(figures.ms - node.ms).toFixed(0)} ms over node`,
    });
  }
}

/**
 * Take the lock the disruptive tests wait on (the services are being measured): made
 * exclusively, so a link planted at its name in /tmp is never followed (this runs as root), and
 * one benchmark at a time; a lock left by a process that is gone is taken over.
 */
function takeLock() {
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const fd = openSync(LOCK, 'wx', 0o644);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    const info = lstatSync(LOCK);
    if (!info.isFile() || info.uid !== process.getuid())
      throw new Error(
        `${LOCK} is not a lock of this user's (a link, or another user's): remove it`,
      );
    const pid = Number(readFileSync(LOCK, 'utf8').trim());
    let alive = false;
    try {
      alive = Number.isInteger(pid) && pid > 0 && process.kill(pid, 0);
    } catch {
      alive = false;
    }
    if (alive) throw new Error(`another benchmark (pid ${pid}) is running: ${LOCK}`);
    rmSync(LOCK, { force: true });
  }
  throw new Error(`could not take ${LOCK}`);
}

async function main() {
  takeLock();
  try {
    say(`yonder benchmarks — ${new Date().toISOString()} — repeats ${REPEATS} (medians)`);
    const sshConfig = services();
    const cases = (env.YONDER_BENCH_CASES ?? 'start,ledger,history,submit,poll,logs,openssh').split(
      ',',
    );
    // What every case file is handed to measure and print with.
    const kit = { median, ms, pipeline, record, say };
    if (cases.includes('start')) startCase();
    if (cases.includes('ledger')) ledgerCase();
    if (cases.includes('history'))
      historyCase({ ...kit, bin: BIN, repeats: REPEATS, sizes: HISTORY_SIZES });
    if (cases.includes('submit')) await submitCase(sshConfig);
    if (cases.includes('poll')) await pollCase(sshConfig);
    if (cases.includes('logs'))
      logsCase({
        ...kit,
        bin: BIN,
        bytes: Number(env.YONDER_BENCH_LOG_BYTES ?? 1024 ** 3),
        sshArgs: sshArgs(sshConfig),
        repeats: REPEATS,
      });
    if (cases.includes('openssh')) await opensshCase({ root: ROOT, bin: BIN, record, say, median });
    mkdirSync(join(ROOT, 'bench-results'), { recursive: true });
    writeFileSync(
      join(ROOT, 'bench-results', 'results.json'),
      `${JSON.stringify({ at: new Date().toISOString(), repeats: REPEATS, results }, null, 2)}\n`,
    );
    say(`\nResults written to bench-results/results.json`);
  } finally {
    rmSync(LOCK, { force: true });
  }
}

await main();
