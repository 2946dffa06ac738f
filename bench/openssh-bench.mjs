// The openssh transport's benchmark: 20 sequential `yonder status` (each refreshing one running
// job) through openssh after `yonder connect`, beside 20 `ssh HOST true` through the same
// master and beside the ssh2 transport, with the logins the sshd log counted meanwhile. The
// host is the shells test host's bash user (its .bashrc prints), which no other test logs in to.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CALLS = 20;

const HOST = 'bash-user';

/** Logins the host accepted so far (one `Accepted publickey` line per login). */
function logins(log) {
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line.includes('Accepted publickey for yonder-bash ')).length;
}

/** Milliseconds of each of `count` sequential runs of `program args`, failing on a non-zero exit. */
function timed(count, program, args, env) {
  const times = [];
  for (let call = 0; call < count; call += 1) {
    const started = performance.now();
    const result = spawnSync(program, args, { encoding: 'utf8', env });
    times.push(performance.now() - started);
    if (result.status !== 0)
      throw new Error(`${program} ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  }
  return times;
}

/**
 * Run the case; `record` prints and keeps one line of figures. `root` is the repository, `bin`
 * the built CLI, `median` the helper.
 */
export async function opensshCase({ root, bin, record, say, median }) {
  const hosts = execFileSync('bash', [join(root, 'scripts/sshd-hosts.sh'), 'env'], {
    encoding: 'utf8',
  });
  const sshConfig = /export YONDER_SSH_CONFIG_LOGIN='([^']+)'/.exec(hosts)[1];
  const sshLog = /export YONDER_SSH_LOG_SHELLS='([^']+)'/.exec(hosts)[1];
  say(`\nSSH transports: ${CALLS} sequential \`yonder status\` of one running job`);
  // A ledger per transport: one refresh polls every job of a target, whichever profile made it.
  const states = {
    openssh: mkdtempSync(join(tmpdir(), 'yonder-bench-openssh-')),
    ssh2: mkdtempSync(join(tmpdir(), 'yonder-bench-ssh2-')),
  };
  const runtime = mkdtempSync(join(tmpdir(), 'yb-'));
  const envOf = (transport) => ({
    ...process.env,
    NO_COLOR: '1',
    YONDER_STATE_DIR: states[transport],
    YONDER_CONFIG: '',
    XDG_CONFIG_HOME: states[transport],
    XDG_RUNTIME_DIR: runtime,
  });
  const cli = (transport, ...args) =>
    execFileSync(process.execPath, [bin, ...args], {
      encoding: 'utf8',
      env: envOf(transport),
    }).trim();
  try {
    for (const transport of ['openssh', 'ssh2'])
      cli(
        transport,
        'profile',
        'add',
        'p',
        '--backend',
        'ssh',
        '--host',
        HOST,
        '--ssh-config',
        sshConfig,
        '--transport',
        transport,
      );
    cli('openssh', 'connect', 'p');
    const route = JSON.parse(cli('openssh', 'profile', 'check', 'p', '--json')).result.transport;
    const jobs = {
      openssh: cli('openssh', 'submit', '--profile', 'p', '--', 'sleep', '600'),
      ssh2: cli('ssh2', 'submit', '--profile', 'p', '--', 'sleep', '600'),
    };
    const status = (transport) =>
      timed(CALLS, process.execPath, [bin, 'status', jobs[transport]], envOf(transport));
    const before = logins(sshLog);
    const openssh = status('openssh');
    const afterOpenssh = logins(sshLog);
    const master = timed(
      CALLS,
      'ssh',
      [
        '-F',
        sshConfig,
        '-o',
        `ControlPath=${route.controlPath}`,
        '-o',
        'BatchMode=yes',
        HOST,
        'true',
      ],
      envOf('openssh'),
    );
    const afterMaster = logins(sshLog);
    const ssh2 = status('ssh2');
    const afterSsh2 = logins(sshLog);
    const node = timed(CALLS, process.execPath, ['-e', '0'], envOf('openssh'));
    const total = (times) => times.reduce((sum, time) => sum + time, 0);
    record({
      case: 'status via openssh / ssh true',
      yonderMs: median(openssh),
      baselineName: 'ssh true (master)',
      baselineMs: median(master),
      extra: `${CALLS} calls: ${(total(openssh) / 1000).toFixed(2)} s against ${(total(master) / 1000).toFixed(2)} s; new logins ${afterOpenssh - before} (yonder), ${afterMaster - afterOpenssh} (ssh)`,
    });
    record({
      case: 'status via openssh / via ssh2',
      yonderMs: median(openssh),
      baselineName: 'yonder via ssh2',
      baselineMs: median(ssh2),
      extra: `${CALLS} calls via ssh2: ${(total(ssh2) / 1000).toFixed(2)} s, new logins ${afterSsh2 - afterMaster}`,
    });
    record({
      case: 'status via openssh / node -e 0',
      yonderMs: median(openssh),
      baselineName: 'node -e 0',
      baselineMs: median(node),
      extra: `yonder status over ssh true + node -e 0: ${(median(openssh) / (median(master) + median(node))).toFixed(2)}×`,
    });
    for (const transport of ['openssh', 'ssh2']) cli(transport, 'cancel', jobs[transport]);
    cli('openssh', 'disconnect', 'p');
  } finally {
    for (const state of Object.values(states)) rmSync(state, { recursive: true, force: true });
    rmSync(runtime, { recursive: true, force: true });
  }
}
