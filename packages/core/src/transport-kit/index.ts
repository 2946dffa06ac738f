/**
 * `@yonder/core/transport-kit`: what an author of a transport that reaches a shell somewhere
 * else (over ssh, into a container, through a cluster's exec) needs, so that it behaves like
 * yonder's own: argv and values never parsed by a shell on the far side, the answer read after
 * unique marks whatever a login shell's startup files print, the time limit enforced on both
 * sides, output bounded or streamed with backpressure.
 *
 * A transport built on it sends `invocation.head` on the stdin of a `/bin/sh -s` on the far
 * side (`runFramedChild` does so through a child process such as `podman exec -i C /bin/sh -s`)
 * and judges the end (`framedResult`, or its own rules).
 */
export { readChildStdout } from './child-stdout-reader.js';
export {
  type FramedChildSpec,
  type FramedEnd,
  framedResult,
  lastLines,
  runFramedChild,
  TIMEOUT_STATUSES,
  timedOut,
} from './framed-child.js';
export {
  DEFAULT_MAX_OUTPUT,
  DEFAULT_TIMEOUT_MS,
  feedInput,
  NOT_FOUND_MARK,
  REMOTE_COMMAND,
  RemoteAnswer,
  type RemoteInvocation,
  remoteInvocation,
} from './remote-invocation.js';
