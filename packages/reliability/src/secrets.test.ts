/**
 * Reliability suite, part 4: secrets. A secret given to `yonder submit` never appears in any
 * process's argv (every /proc/PID/cmdline on the machine is scanned while the job holding it
 * runs, during yonder's own transport commands, and on the ssh host, which is this machine),
 * in the job's log, in the ledger, or in an error message; the job still receives it exactly.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { requireCliBuild, requireSshHosts, runCli, runCliJson, until } from '@yonder/test-helpers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cleanupAll,
  filesContaining,
  readJob,
  scratch,
  sharedDir,
  startScanner,
  summary,
} from './harness.js';

const SSH_CONFIG = '/var/tmp/yonder-ssh/client/config';
const SSHD_LOG = '/var/tmp/yonder-ssh/hosts/target/sshd.log';

beforeAll(() => requireCliBuild());
afterAll(() => cleanupAll());

/** A secret with shell syntax in it, unique per run. */
function newSecret(tag: string): string {
  return `s3cr3t-${tag}-${createHash('sha256').update(`${Math.random()}`).digest('hex').slice(0, 16)} $(touch /nonexistent/x) 'q' "d" \`id\``;
}

/** The part of a secret that survives quoting (a quoted copy still contains it). */
function core(secret: string): string {
  return secret.split(' ')[0] as string;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The job: proves it got the secrets (their hashes), says it is ready, holds them a while. */
const HOLDER =
  'printf %s "$TOKEN" | sha256sum > "$1"; printf %s "$FILED" | sha256sum >> "$1"; echo ready; sleep 2';

describe('secrets', () => {
  it('local backend: the secret reaches the job but no argv, log, ledger file or output', async () => {
    const state = scratch('secret-local');
    const work = scratch('secret-local-work');
    const secret = newSecret('local');
    const filed = newSecret('file');
    const secretsFile = join(work, 'secrets.env');
    writeFileSync(secretsFile, `FILED=${filed}\n`);
    const cli = { state, cwd: work, env: { TOKEN: secret } };
    const proof = join(work, 'proof');
    const scanner = startScanner(work, [core(secret), core(filed)]);
    const submit = await runCli(
      [
        'submit',
        '--secret',
        'TOKEN',
        '--secrets-file',
        secretsFile,
        '--',
        'sh',
        '-c',
        HOLDER,
        'job',
        proof,
      ],
      cli,
    );
    expect(submit.code, submit.stderr).toBe(0);
    const id = submit.stdout.trim();
    await until(() => existsSync(proof), 10_000, 'the job to start');
    await sleep(500);
    const outputs = [
      submit,
      await runCli(['list'], cli),
      await runCli(['status', id, '--json'], cli),
      await runCli(['wait', id], cli),
      await runCli(['logs', id], cli),
    ];
    const scan = await scanner.stop();
    expect(scan.hits).toEqual([]);
    expect(
      readFileSync(proof, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ')[0]),
    ).toEqual([sha256(secret), sha256(filed)]);
    for (const output of outputs) {
      expect(output.stdout + output.stderr).not.toContain(core(secret));
      expect(output.stdout + output.stderr).not.toContain(core(filed));
    }
    // The ledger, the job directory (its log; secrets.sh is deleted once sourced), the caches.
    expect(filesContaining(state, core(secret))).toEqual([]);
    expect(filesContaining(state, core(filed))).toEqual([]);
    const jobDir = readJob(state, id).data.jobDir;
    expect(existsSync(join(jobDir, 'secrets.sh'))).toBe(false);
    expect(readJob(state, id).spec.secretNames.sort()).toEqual(['FILED', 'TOKEN']);
    summary(
      `secrets (local): ${scan.scans} scans of every /proc/*/cmdline (${scan.processes} process images) during submit, run, list, status, wait, logs: 0 hits; job got both secrets (sha256 match); 0 ledger/log files contain them`,
    );
  }, 60_000);

  it('local backend: a submit that fails after secrets were given leaks them into no message or record', async () => {
    const state = scratch('secret-fail');
    const secret = newSecret('fail');
    const cli = { state, cwd: state, env: { TOKEN: secret } };
    const failed = await runCliJson(
      ['submit', '--secret', 'TOKEN', '--cwd', '/nonexistent/dir', '--', 'true'],
      cli,
    );
    expect(failed.code).toBe(1);
    expect(failed.doc.error.code).toBe('E_SUBMIT_REFUSED');
    expect(failed.stdout + failed.stderr).not.toContain(core(secret));
    const listed = await runCliJson(['list', '--all'], cli);
    expect(listed.doc.result[0]).toMatchObject({ state: 'failed', reason: 'submit-refused' });
    expect(listed.stdout).not.toContain(core(secret));
    const records = readdirSync(join(state, 'jobs'), { recursive: true })
      .map(String)
      .filter((name) => name.endsWith('.json'));
    for (const name of records)
      expect(readFileSync(join(state, 'jobs', name), 'utf8')).not.toContain(core(secret));
  }, 30_000);

  // Regression (found by this suite, fixed in 366dc51): submitLocal wrote secrets.sh before it
  // checked the working directory, and nothing removed the job directory when the check failed:
  // `yonder submit --secret TOKEN --cwd /nonexistent -- true` left the secret on disk in
  // <state>/runs/<id>/secrets.sh for good.
  it('a failed local submit leaves no file holding the secret', async () => {
    const state = scratch('secret-left');
    const secret = newSecret('left');
    const failed = await runCli(
      ['submit', '--secret', 'TOKEN', '--cwd', '/nonexistent/dir', '--', 'true'],
      {
        state,
        cwd: state,
        env: { TOKEN: secret },
      },
    );
    expect(failed.code).toBe(1);
    const left = filesContaining(state, core(secret));
    summary(
      `failed local submit: files still holding the secret: ${left.map((p) => p.slice(state.length)).join(', ') || 'none'}`,
    );
    expect(left).toEqual([]);
  }, 30_000);

  it('ssh backend: the secret crosses on stdin only: no argv here or on the host, no log, no ledger, no error', async () => {
    requireSshHosts();
    const state = scratch('secret-ssh');
    const shared = sharedDir('secret-ssh-out');
    const secret = newSecret('ssh');
    const filed = newSecret('sshfile');
    const secretsFile = join(shared, 'secrets.env');
    writeFileSync(secretsFile, `FILED=${filed}\n`);
    const cli = { state, cwd: shared, env: { TOKEN: secret } };
    const profile = await runCli(
      ['profile', 'add', 'box', '--backend', 'ssh', '--host', 'target', '--ssh-config', SSH_CONFIG],
      cli,
    );
    expect(profile.code, profile.stderr).toBe(0);
    const logBefore = existsSync(SSHD_LOG) ? statSync(SSHD_LOG).size : 0;
    const proof = join(shared, 'proof');
    const scanner = startScanner(shared, [core(secret), core(filed)]);
    const submit = await runCli(
      [
        'submit',
        '--profile',
        'box',
        '--secret',
        'TOKEN',
        '--secrets-file',
        secretsFile,
        '--',
        'sh',
        '-c',
        HOLDER,
        'job',
        proof,
      ],
      cli,
    );
    expect(submit.code, submit.stderr).toBe(0);
    const id = submit.stdout.trim();
    await until(() => existsSync(proof), 15_000, 'the remote job to start');
    const outputs = [
      submit,
      await runCli(['list'], cli),
      await runCli(['wait', id], cli),
      await runCli(['logs', id], cli),
    ];
    // A submit that fails on the host after the secrets were sent.
    await runCli(
      [
        'profile',
        'add',
        'denied',
        '--backend',
        'ssh',
        '--host',
        'target',
        '--ssh-config',
        SSH_CONFIG,
        '--workdir',
        '/root/yonder-denied',
      ],
      cli,
    );
    const failed = await runCliJson(
      ['submit', '--profile', 'denied', '--secret', 'TOKEN', '--', 'true'],
      cli,
    );
    expect(failed.code).toBe(1);
    expect(failed.doc.error.code).toBe('E_SUBMIT_FAILED');
    outputs.push(failed);
    const scan = await scanner.stop();
    expect(scan.hits).toEqual([]);
    expect(
      readFileSync(proof, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ')[0]),
    ).toEqual([sha256(secret), sha256(filed)]);
    for (const output of outputs) expect(output.stdout + output.stderr).not.toContain(core(secret));
    expect(filesContaining(state, core(secret))).toEqual([]);
    const jobDir = readJob(state, id).data.jobDir;
    // On the host: secrets.sh is gone once sourced; nothing else in the job directory holds it.
    expect(existsSync(join(jobDir, 'secrets.sh'))).toBe(false);
    expect(filesContaining(jobDir, core(secret))).toEqual([]);
    expect(filesContaining(jobDir, core(filed))).toEqual([]);
    const sshdLog = existsSync(SSHD_LOG)
      ? readFileSync(SSHD_LOG).subarray(logBefore)
      : Buffer.alloc(0);
    expect(sshdLog.includes(core(secret))).toBe(false);
    summary(
      `secrets (ssh): ${scan.scans} scans of every /proc/*/cmdline (${scan.processes} process images, the ssh host is this machine) during submit, run, list, wait, logs and a failed submit: 0 hits; job got both secrets; 0 files in the ledger, the remote job directory or the sshd log contain them`,
    );
  }, 90_000);
});
