/** The one remote invocation of both ssh transports, run through a real sh: marks found across chunks, startup noise dropped, input sent only once sh has started, the end line read. */
import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { feedInput, REMOTE_COMMAND, RemoteAnswer, remoteInvocation } from './remote-invocation.js';

/** Run an invocation through a real `sh -c 'noise; exec /bin/sh -s'`, as sshd would with a login shell whose startup prints. */
function runThroughShell(argv: string[], noise: string) {
  const invocation = remoteInvocation(argv, {});
  const answer = new RemoteAnswer(invocation);
  const done = spawnSync('sh', ['-c', `${noise}; ${invocation.command}`], {
    input: invocation.head,
  });
  // Fed in pieces of 3 bytes: marks split across chunks are still found.
  for (let at = 0; at < done.stdout.length; at += 3)
    answer.pushStdout(done.stdout.subarray(at, at + 3));
  for (let at = 0; at < done.stderr.length; at += 3)
    answer.pushStderr(done.stderr.subarray(at, at + 3));
  return { answer, code: done.status };
}

describe('remoteInvocation', () => {
  it('sends only "exec /bin/sh -s" as the command', () => {
    expect(remoteInvocation(['true'], {}).command).toBe(REMOTE_COMMAND);
    expect(REMOTE_COMMAND).toBe('exec /bin/sh -s');
  });

  it('drops what startup files print, and reads the exit status from the end line', () => {
    const { answer, code } = runThroughShell(
      ['sh', '-c', 'printf "%s|" "$@"; echo err >&2; exit 7', 'x', "it's", '$(no)', 'new\nline'],
      'echo Welcome; printf "SIZE 3" ; echo noise >&2',
    );
    expect(code).toBe(7);
    expect(answer.started).toBe(true);
    expect(answer.status).toBe(7);
    const result = answer.result();
    expect(result.stdout).toBe("it's|$(no)|new\nline|");
    expect(result.stderr).toBe('err\n');
  });

  it('hands the caller input to the command, byte for byte, through a /bin/sh that reads ahead (dash)', async () => {
    const input = Buffer.from([0x6c, 0x0a, 0xff, 0x00, 0xc3, 0xa9, 0x0a]);
    const invocation = remoteInvocation(['od', '-An', '-tx1'], { input });
    const answer = new RemoteAnswer(invocation);
    const child = spawn('sh', ['-c', `echo Welcome; ${invocation.command}`]);
    child.stdout.on('data', (chunk: Buffer) => answer.pushStdout(chunk));
    child.stderr.on('data', (chunk: Buffer) => answer.pushStderr(chunk));
    const closed = new Promise((resolve) => child.on('close', resolve));
    await feedInput(
      answer,
      invocation,
      (chunk) => child.stdin.write(chunk),
      () => child.stdin.end(),
    );
    await closed;
    expect(answer.result().stdout.replace(/\s+/g, ' ').trim()).toBe('6c 0a ff 00 c3 a9 0a');
    expect(answer.status).toBe(0);
  });

  it('says what was printed when sh never started', () => {
    const answer = new RemoteAnswer(remoteInvocation(['true'], {}));
    answer.pushStderr(Buffer.from('This account is currently not available.\n'));
    expect(answer.started).toBe(false);
    expect(answer.preamble()).toBe('This account is currently not available.');
    expect(answer.status).toBeNull();
  });

  it('waits for the start mark before it sends the input', async () => {
    const invocation = remoteInvocation(['cat'], { input: 'secret' });
    const answer = new RemoteAnswer(invocation);
    const written: string[] = [];
    let ended = false;
    const feeding = feedInput(
      answer,
      invocation,
      (chunk) => written.push(chunk.toString()),
      () => {
        ended = true;
      },
    );
    await Promise.resolve();
    expect(written).toEqual([invocation.head.toString()]);
    expect(ended).toBe(false);
    answer.pushStdout(Buffer.from(`motd\n${invocation.startMark}`));
    await feeding;
    expect(written[1]).toBe('secret');
    expect(ended).toBe(true);
  });
});

describe('RemoteAnswer with onStdout', () => {
  it('streams stdout after the start mark in order, holding back while the caller is busy, and fails with what it threw', async () => {
    const taken: Buffer[] = [];
    let release: () => void = () => {};
    const invocation = remoteInvocation(['cat'], {
      encoding: 'buffer',
      onStdout: (chunk) => {
        taken.push(Buffer.from(chunk));
        // Busy with every second chunk until released.
        if (taken.length % 2 === 1) return new Promise<void>((resolve) => (release = resolve));
      },
    });
    const answer = new RemoteAnswer(invocation);
    const bytes = Buffer.from([0xff, 0x00, 0x0a, 0xe2, 0x98, 0x83, 0x80]);
    expect(answer.pushStdout(Buffer.from(`motd\n${invocation.startMark}`))).toBeUndefined();
    const busy = answer.pushStdout(bytes.subarray(0, 3));
    expect(busy).toBeInstanceOf(Promise);
    // A transport that read on anyway: kept in order behind the busy call.
    answer.pushStdout(bytes.subarray(3));
    expect(taken).toHaveLength(1);
    release();
    await answer.delivered();
    expect(Buffer.concat(taken).equals(bytes)).toBe(true);
    expect(answer.result().stdoutBytes?.length).toBe(0);

    const failing = remoteInvocation(['cat'], {
      encoding: 'buffer',
      onStdout: async () => {
        throw new Error('the reader went away');
      },
    });
    const stopped = new RemoteAnswer(failing);
    stopped.pushStdout(Buffer.from(`${failing.startMark}x`));
    await expect(stopped.delivered()).rejects.toThrow('the reader went away');
    expect(stopped.failed).toBe(true);
  });
});
