/** Linux signal numbers and their names (x86 and arm), independent of the machine reading them. */
const LINUX_SIGNALS: Readonly<Record<number, string>> = {
  1: 'SIGHUP',
  2: 'SIGINT',
  3: 'SIGQUIT',
  4: 'SIGILL',
  5: 'SIGTRAP',
  6: 'SIGABRT',
  7: 'SIGBUS',
  8: 'SIGFPE',
  9: 'SIGKILL',
  10: 'SIGUSR1',
  11: 'SIGSEGV',
  12: 'SIGUSR2',
  13: 'SIGPIPE',
  14: 'SIGALRM',
  15: 'SIGTERM',
  16: 'SIGSTKFLT',
  17: 'SIGCHLD',
  18: 'SIGCONT',
  19: 'SIGSTOP',
  20: 'SIGTSTP',
  21: 'SIGTTIN',
  22: 'SIGTTOU',
  23: 'SIGURG',
  24: 'SIGXCPU',
  25: 'SIGXFSZ',
  26: 'SIGVTALRM',
  27: 'SIGPROF',
  28: 'SIGWINCH',
  29: 'SIGIO',
  30: 'SIGPWR',
  31: 'SIGSYS',
};

/** The name of a Linux signal number (`9` → `SIGKILL`); real-time signals as `SIGRTMIN+n`; null otherwise. */
export function signalName(signal: number): string | null {
  if (LINUX_SIGNALS[signal]) return LINUX_SIGNALS[signal] as string;
  if (signal >= 34 && signal <= 64) return `SIGRTMIN+${signal - 34}`;
  return null;
}
