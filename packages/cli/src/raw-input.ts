/** Bytes that are not UTF-8 in yonder's own command line or environment: Node reads both as text and would replace them (U+FFFD), so they are refused, named, before anything runs. */
import { isUtf8 } from 'node:buffer';
import { readFileSync } from 'node:fs';

/** The commands whose environment their jobs inherit. */
const STARTS_JOBS = new Set(['submit', 'resubmit']);

/** NUL-separated entries of a /proc file, as bytes; null where the system has none. */
function entries(path: string): Buffer[] | null {
  let raw: Buffer;
  try {
    raw = readFileSync(path);
  } catch {
    return null;
  }
  const out: Buffer[] = [];
  let from = 0;
  for (let at = raw.indexOf(0); at >= 0; at = raw.indexOf(0, from)) {
    out.push(raw.subarray(from, at));
    from = at + 1;
  }
  if (from < raw.length) out.push(raw.subarray(from));
  return out;
}

/** How the refusal names an argument: by its place, and by the option it is the value of. */
function argumentName(argv: readonly string[], index: number): string {
  const before = argv[index - 1];
  const word = argv[index] as string;
  const split = argv.indexOf('--');
  if (split >= 0 && index > split) return `argument ${index - split} of the job's command`;
  if (word.startsWith('--') && word.includes('=')) return `the value of ${word.split('=')[0]}`;
  if (before?.startsWith('-') && !word.startsWith('-')) return `the value of ${before}`;
  return `argument ${index + 1} (after "yonder")`;
}

/**
 * The first of yonder's arguments (and, for a command that starts jobs, of the variables the
 * job inherits) whose bytes are not UTF-8, as a message naming it; null when all are, or where
 * the raw bytes cannot be read (no /proc). `argv` is what follows the script on the command line.
 */
export function notUtf8(argv: readonly string[]): { message: string; status: number } | null {
  const raw = entries('/proc/self/cmdline');
  if (raw && raw.length >= argv.length) {
    const own = raw.slice(raw.length - argv.length);
    const bad = own.findIndex((bytes) => !isUtf8(bytes));
    if (bad >= 0)
      return {
        status: 2,
        message: `${argumentName(argv, bad)} is not valid UTF-8 (bytes ${own[bad]?.toString('hex')}); yonder reads its command line as UTF-8 and would change it. Give it as UTF-8 text (for binary data, use --settings FILE or a file the job reads).`,
      };
  }
  if (!STARTS_JOBS.has(argv[0] ?? '')) return null;
  for (const bytes of entries('/proc/self/environ') ?? []) {
    if (isUtf8(bytes)) continue;
    const at = bytes.indexOf(0x3d);
    const name = bytes.subarray(0, at < 0 ? bytes.length : at).toString('latin1');
    return {
      status: 1,
      message: `the environment variable ${JSON.stringify(name)} is not valid UTF-8; the job would inherit it changed. Unset it or set it to UTF-8 text before submitting.`,
    };
  }
  return null;
}
