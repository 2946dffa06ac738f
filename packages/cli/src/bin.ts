#!/usr/bin/env node
import { SIGPIPE_STATUS, watchStdout } from './stdout-pipe.js';
import { VERSION } from './version.js';

const argv = process.argv.slice(2);
// A reader that closes stdout early (`yonder logs ID | head -1`) ends yonder quietly.
const stdout = watchStdout();
stdout.closed.addEventListener('abort', () => {
  process.exitCode = SIGPIPE_STATUS;
});
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version')) {
  // Answer without loading anything else: scripts call this to check the install.
  stdout.send(`${VERSION}\n`);
} else {
  const { fixSearchPath, main } = await import('./main.js');
  const { notUtf8 } = await import('./raw-input.js');
  fixSearchPath();
  const problem = notUtf8(argv);
  (problem === null
    ? main(argv)
    : Promise.resolve().then(() => {
        process.stderr.write(`yonder: ${problem.message}\n`);
        return problem.status;
      })
  ).then(
    (code) => {
      process.exitCode = stdout.closed.aborted ? SIGPIPE_STATUS : code;
    },
    (error: unknown) => {
      if (stdout.closed.aborted) return;
      process.stderr.write(
        `yonder: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = 1;
    },
  );
}
