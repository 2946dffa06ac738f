import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  hostileWords,
  privateTempDir,
  requireCliBuild,
  runCli,
  runCliJson,
  untilJobGone,
} from '@yonder/test-helpers';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

let state: string;
let work: string;
const sites: string[] = [];

const CORE = pathToFileURL(new URL('../../core/dist/index.js', import.meta.url).pathname).href;
const TOYQ = new URL('../../backend-command/examples/toyq', import.meta.url).pathname;

/** A third-party plugin: the `recording` transport, which logs every argv it runs to its `log` option, then runs it here. */
const RECORDING_PLUGIN = `import { appendFileSync } from 'node:fs';
import { createLocalTransport, Type } from ${JSON.stringify(CORE)};
export function createYonderPlugin() {
  const recording = (profile) => {
    const local = createLocalTransport();
    const record = (argv) => appendFileSync(String(profile.transportOptions.log), JSON.stringify(argv) + '\\n');
    return {
      specificationVersion: 'v1',
      id: 'recording',
      target: 'recording',
      run(argv, options) { record(argv); return local.run(argv, options); },
      runScript(script, args, options) { record(['sh', '-c', script, ...args]); return local.runScript(script, args, options); },
      close: () => local.close(),
    };
  };
  recording.optionsSchema = Type.Object({ log: Type.String() }, { additionalProperties: false });
  return { specificationVersion: 'v1', transports: { recording } };
}
`;

/** A config naming the recording plugin, installed in the config's node_modules. */
function recordingSite(): Record<string, string> {
  // Not below /tmp: a plugin below a directory all may write to is refused.
  const site = privateTempDir('yonder-cli-site');
  sites.push(site);
  const dir = join(site, 'node_modules', 'yonder-transport-recording');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({
      name: 'yonder-transport-recording',
      version: '1.0.0',
      type: 'module',
      main: 'index.js',
    }),
  );
  writeFileSync(join(dir, 'index.js'), RECORDING_PLUGIN);
  writeFileSync(
    join(site, 'config.json'),
    JSON.stringify({ plugins: ['yonder-transport-recording'] }),
  );
  return { YONDER_CONFIG: join(site, 'config.json'), TOYQ_DIR: join(site, 'queue') };
}

function yonder(args: string[], env: Record<string, string> = {}) {
  return runCli(args, { state, cwd: work, env });
}

function json(args: string[], env: Record<string, string> = {}) {
  return runCliJson(args, { state, cwd: work, env });
}

beforeAll(() => requireCliBuild());

beforeEach(() => {
  state = mkdtempSync(join(tmpdir(), 'yonder-cli-state-'));
  work = mkdtempSync(join(tmpdir(), 'yonder cli work '));
});

afterEach(() => {
  for (const site of sites.splice(0))
    rmSync(site, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  rmSync(state, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe('yonder CLI', () => {
  it('submit → list → logs → wait → status round trip on the local backend', async () => {
    const submit = await yonder([
      'submit',
      '--name',
      'demo',
      '--',
      'sh',
      '-c',
      'echo hello from yonder; exit 0',
    ]);
    expect(submit.code, submit.stderr).toBe(0);
    const id = submit.stdout.trim();
    expect(id).toMatch(/^[0-9a-f]{12}$/);
    const list = await yonder(['list']);
    expect(list.stdout).toContain(id);
    expect(list.stdout).toMatch(/ID\s+NAME\s+PROFILE\s+STATE/);
    const wait = await yonder(['wait', id.slice(0, 5)]);
    expect(wait.code).toBe(0);
    expect(wait.stdout).toContain(`${id} succeeded`);
    const logs = await yonder(['logs', id]);
    expect(logs.stdout).toBe('hello from yonder\n');
    const status = await json(['status', id]);
    expect(status.doc.ok).toBe(true);
    for (const key of [
      'id',
      'name',
      'profile',
      'backend',
      'state',
      'nativeState',
      'exitCode',
      'signal',
      'reason',
      'failureKind',
      'externalId',
      'createdAt',
      'updatedAt',
      'error',
      'history',
    ]) {
      expect(status.doc.result[0]).toHaveProperty(key);
    }
    expect(status.doc.result[0]).toMatchObject({
      id,
      name: 'demo',
      profile: 'local',
      backend: 'local',
      state: 'succeeded',
      exitCode: 0,
    });
  });

  it('passes hostile arguments to the job literally', async () => {
    const canary = join(work, 'canary');
    const words = hostileWords(canary);
    const submit = await yonder(['submit', '--', 'printf', '%s\\n', ...words]);
    expect(submit.code, submit.stderr).toBe(0);
    const id = submit.stdout.trim();
    expect((await yonder(['wait', id])).code).toBe(0);
    expect((await yonder(['logs', id, '--all'])).stdout).toBe(`${words.join('\n')}\n`);
    expect(existsSync(canary)).toBe(false);
  });

  it('runs the job in the current directory, with env, settings and secrets', async () => {
    writeFileSync(join(work, 'settings.json'), JSON.stringify({ data: '/data/set 1', n: 2 }));
    const submit = await yonder(
      [
        'submit',
        '--settings',
        'settings.json',
        '--env',
        'GREETING=hi there',
        '--secret',
        'API_TOKEN',
        '--',
        'sh',
        '-c',
        'pwd; echo "$GREETING"; echo "$API_TOKEN"; cat "$1"',
        'sh',
        '{settings}',
      ],
      { API_TOKEN: 'tok$(en)' },
    );
    expect(submit.code, submit.stderr).toBe(0);
    const id = submit.stdout.trim();
    expect((await yonder(['wait', id])).code).toBe(0);
    const out = (await yonder(['logs', id, '--all'])).stdout.split('\n');
    expect(out[0]).toBe(work);
    expect(out[1]).toBe('hi there');
    expect(out[2]).toBe('tok$(en)');
    expect(JSON.parse(out.slice(3).join('\n'))).toEqual({ data: '/data/set 1', n: 2 });
    const ledger = readFileSync(join(state, 'jobs', id.slice(0, 2), `${id}.json`), 'utf8');
    expect(ledger).not.toContain('tok$(en)');
    expect(ledger).toContain('API_TOKEN');
  });

  it('wait exits with the failed job’s exit code, and 124 on timeout', async () => {
    const failing = (await yonder(['submit', '--', 'sh', '-c', 'exit 7'])).stdout.trim();
    const wait = await yonder(['wait', failing]);
    expect(wait.code).toBe(7);
    expect(wait.stdout).toContain('failed exit 7');
    const slow = (await yonder(['submit', '--', 'sleep', '30'])).stdout.trim();
    const timeout = await yonder(['wait', slow, '--timeout', '1']);
    expect(timeout.code).toBe(124);
    const cancel = await json(['cancel', slow]);
    expect(cancel.doc.result[0]).toMatchObject({ id: slow, state: 'cancelled' });
    await untilJobGone(cancel.doc.result[0].data.pid);
    const both = await yonder(['wait', failing, slow]);
    expect(both.code).toBe(1);
  });

  it('follows logs until the job ends', async () => {
    const id = (
      await yonder(['submit', '--', 'sh', '-c', 'echo one; sleep 1; echo two'])
    ).stdout.trim();
    const follow = await yonder(['logs', id, '--follow']);
    expect(follow.code).toBe(0);
    expect(follow.stdout).toBe('one\ntwo\n');
  });

  it('prints one JSON envelope for errors, and exits 2 on usage errors', async () => {
    const missing = await json(['status', 'abcdef']);
    expect(missing.code).toBe(1);
    expect(missing.doc).toEqual({
      ok: false,
      error: { code: 'E_NO_SUCH_JOB', message: expect.stringContaining('abcdef') },
    });
    const usage = await json(['submit', '--bogus', '--', 'true']);
    expect(usage.code).toBe(2);
    expect(usage.doc.error.code).toBe('E_USAGE');
    expect((await yonder(['submit', 'echo', 'hi'])).stderr).toContain('Put the command after "--"');
    expect((await yonder(['frobnicate'])).code).toBe(2);
    expect((await yonder([])).code).toBe(2);
    const help = await yonder(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('yonder submit');
    expect((await yonder(['submit', '--help'])).code).toBe(0);
    const { version } = JSON.parse(
      readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    expect((await yonder(['--version'])).stdout).toBe(`${version}\n`);
    expect(help.stdout.startsWith(`yonder ${version}: `), help.stdout).toBe(true);
    const resources = await json(['submit', '--cpus', '2', '--', 'true']);
    expect(resources.doc.error).toMatchObject({
      code: 'E_INVALID_JOB_SPEC',
      message: expect.stringContaining('resources.cpus'),
    });
    expect((await yonder(['submit', '--cpus', 'two', '--', 'true'])).code).toBe(2);
  });

  it('manages profiles: add, show, list, check, remove; invalid fields are named', async () => {
    const workdir = join(work, 'runs');
    const add = await yonder([
      'profile',
      'add',
      'Mine',
      '--backend',
      'local',
      '--workdir',
      workdir,
      '--pending-timeout',
      '60',
    ]);
    expect(add.code, add.stderr).toBe(0);
    expect((await yonder(['profile', 'add', 'mine', '--backend', 'local'])).stderr).toContain(
      '--force',
    );
    const show = await json(['profile', 'show', 'mine']);
    expect(show.doc.result).toMatchObject({
      name: 'Mine',
      backend: 'local',
      workdir,
      pendingTimeoutSeconds: 60,
    });
    expect((await yonder(['profile', 'list'])).stdout).toMatch(/^local\tlocal\nMine\tlocal\n$/);
    const check = await yonder(['profile', 'check', 'mine']);
    expect(check.code, check.stdout).toBe(0);
    expect(check.stdout).toContain('Check: ok');
    const id = (await yonder(['submit', '--profile', 'mine', '--', 'true'])).stdout.trim();
    expect((await yonder(['wait', id])).code).toBe(0);
    expect(existsSync(join(workdir, id, 'exit-code'))).toBe(true);
    const listed = await json(['list', '--profile', 'MINE']);
    expect(listed.doc.result.map((job: { id: string }) => job.id)).toEqual([id]);

    const bad = await yonder([
      'profile',
      'add',
      'bad',
      '--backend',
      'local',
      '--workdir',
      'relative/dir',
      '--host=-oProxyCommand=x',
      '--set',
      'x=1',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('workdir: must be an absolute path');
    expect(bad.stderr).toContain('host: may not begin with "-"');
    const half = await yonder([
      'profile',
      'add',
      'half',
      '--backend',
      'local',
      '--local-root',
      '/data',
    ]);
    expect(half.stderr).toContain('remoteRoot');
    const unknown = await yonder(['profile', 'add', 'grid', '--backend', 'pbs']);
    expect(unknown.code).toBe(1);
    // The error lists every backend installed, loading the known packages to find them.
    expect(unknown.stderr).toMatch(
      /backend: No backend named "pbs"\. Available: local, (\w+, )*slurm/,
    );
    expect((await yonder(['profile', 'remove', 'mine'])).code).toBe(0);
    expect((await yonder(['profile', 'remove', 'mine'])).code).toBe(1);
    expect((await yonder(['submit', '--profile', 'nosuch', '--', 'true'])).stderr).toContain(
      'yonder profile add nosuch',
    );
  });

  it('refuses a profile whose transport nobody provides, naming it', async () => {
    const add = await yonder(['profile', 'add', 'x', '--backend', 'local', '--transport', 'mine']);
    expect(add.code).toBe(1);
    expect(add.stderr).toMatch(
      /transport: No transport named "mine"\. Available: local, (\w+, )*ssh, ssh2, openssh\./,
    );
    expect(add.stderr).toContain('Name the package that provides it in your yonder config');
    expect((await yonder(['profile', 'show', 'x'])).code).toBe(1);
  });

  it('runs a backend over a third-party transport the profile names, with its options checked', async () => {
    const env = recordingSite();
    const record = join(work, 'argv.jsonl');
    const add = (name: string, ...extra: string[]) =>
      yonder(
        [
          'profile',
          'add',
          name,
          '--backend',
          'command',
          '--transport',
          'recording',
          '--workdir',
          join(work, 'jobs'),
          '--set',
          `submit=${TOYQ}/toyq-submit {script}`,
          '--set',
          'idPattern=Job (?<id>\\d+) queued',
          '--set',
          `status=${TOYQ}/toyq-status {external_ids}`,
          '--set',
          `cancel=${TOYQ}/toyq-cancel {external_ids}`,
          ...extra,
        ],
        env,
      );
    const bad = await add('bad', '--transport-set', 'logfile=x');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('transportOptions.logfile: unknown field');
    expect(bad.stderr).toContain('transportOptions.log: expected required property');
    const ok = await add('rec', '--transport-set', `log=${record}`);
    expect(ok.code, ok.stderr).toBe(0);
    const show = await json(['profile', 'show', 'rec'], env);
    expect(show.doc.result).toMatchObject({
      transport: 'recording',
      transportOptions: { log: record },
    });
    const submit = await yonder(
      ['submit', '--profile', 'rec', '--', 'sh', '-c', 'echo via $0', 'it'],
      env,
    );
    expect(submit.code, submit.stderr).toBe(0);
    const id = submit.stdout.trim();
    expect((await yonder(['wait', id, '--timeout', '60'], env)).code).toBe(0);
    expect((await yonder(['logs', id], env)).stdout).toBe('via it\n');
    const runs = readFileSync(record, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as string[]);
    expect(runs.some((argv) => argv.includes(`${TOYQ}/toyq-submit`))).toBe(true);
    // Through the check that judges it on the target first (RUN_TRUSTED_PROGRAM), an argument.
    expect(runs.some((argv) => argv.includes(`${TOYQ}/toyq-status`))).toBe(true);
  }, 90_000);

  it('uses $YONDER_PROFILE as the default profile', async () => {
    await yonder([
      'profile',
      'add',
      'envdefault',
      '--backend',
      'local',
      '--workdir',
      join(work, 'w'),
    ]);
    const submit = await json(['submit', '--', 'true'], { YONDER_PROFILE: 'envdefault' });
    expect(submit.doc.result.profile).toBe('envdefault');
    // Until its wrapper has recorded the end, the job still writes in the work directory
    // (ci24: the clean-up after the test met a file written meanwhile, ENOTEMPTY).
    expect((await yonder(['wait', submit.doc.result.id])).code).toBe(0);
  });

  it('lists by state, refuses unknown states, and reports corrupt records without failing', async () => {
    const id = (await yonder(['submit', '--', 'true'])).stdout.trim();
    await yonder(['wait', id]);
    expect((await json(['list', '--state', 'succeeded'])).doc.result).toHaveLength(1);
    expect((await json(['list', '--state', 'running', '--no-refresh'])).doc.result).toHaveLength(0);
    expect((await yonder(['list', '--state', 'done'])).code).toBe(2);
    writeFileSync(join(state, 'jobs', id.slice(0, 2), `${id}.json`), '{');
    const list = await yonder(['list', '--all']);
    expect(list.code).toBe(0);
    expect(list.stderr).toContain(`${id}.json`);
  });
});
