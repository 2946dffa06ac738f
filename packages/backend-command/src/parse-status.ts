/** One job's state as a status command reported it. */
export interface StatusLine {
  id: string | null;
  state: string;
  exitCode: number | null;
  reason: string | null;
}

function fromJson(line: string): StatusLine | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const record = value as Record<string, unknown>;
  const state = record.state ?? record.status;
  if (typeof state !== 'string') return null;
  const id = record.id ?? record.external_id ?? record.job_id;
  const code = record.exit_code ?? record.exitCode;
  return {
    id: typeof id === 'string' || typeof id === 'number' ? String(id) : null,
    state,
    exitCode: typeof code === 'number' && Number.isInteger(code) ? code : null,
    reason: typeof record.reason === 'string' ? record.reason : null,
  };
}

/**
 * Read status output: JSON lines (`{"id":…,"state":…,"exit_code":…,"reason":…}`) or text lines
 * `id state [exit_code] [reason…]`. With `withIds` false (one call per job), a line may also be
 * just `state [exit_code] [reason…]`. Lines that do not fit are skipped.
 */
export function parseStatus(text: string, withIds: boolean, knownId?: string): StatusLine[] {
  const out: StatusLine[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '').trim();
    if (!line) continue;
    if (line.startsWith('{')) {
      const parsed = fromJson(line);
      if (parsed) out.push(parsed);
      continue;
    }
    const words = line.split(/\s+/);
    let id: string | null = null;
    if (withIds || (knownId !== undefined && words[0] === knownId && words.length > 1))
      id = words.shift() ?? null;
    const state = words.shift();
    if (!state) continue;
    let exitCode: number | null = null;
    if (words[0] !== undefined && /^-?\d+$/.test(words[0])) exitCode = Number(words.shift());
    out.push({ id, state, exitCode, reason: words.length > 0 ? words.join(' ') : null });
  }
  return out;
}

/** The job id from submit output: a pattern's `id` group, else its first group, else its match; else the first non-empty line. */
export function extractId(output: string, pattern?: string): string {
  if (pattern) {
    const match = new RegExp(pattern, 'm').exec(output);
    if (!match) return '';
    return (match.groups?.id ?? match[1] ?? match[0]).trim();
  }
  return (
    output
      .split('\n')
      .find((line) => line.trim() !== '')
      ?.trim() ?? ''
  );
}
