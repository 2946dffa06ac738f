import { YonderError } from '../errors/yonder-error.js';

/**
 * Split a command line into words the way POSIX sh would, without running anything:
 * whitespace separates words; '…' is literal; "…" keeps `\"`, `\\`, `\$`, `` \` `` escapes;
 * a backslash outside quotes escapes the next character. No expansion of any kind happens:
 * `$()`, `;`, `|`, `*` and `~` stay literal text.
 * @throws YonderError `E_INVALID_TEMPLATE` on an unterminated quote or a trailing backslash.
 */
export function splitCommandLine(text: string, label = 'Command'): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let index = 0;
  const fail = (message: string): never => {
    throw new YonderError('E_INVALID_TEMPLATE', `${label} cannot be parsed: ${message}.`);
  };
  if (text.includes('\0')) fail('it contains a NUL character');
  while (index < text.length) {
    const char = text[index] as string;
    if (char === ' ' || char === '\t' || char === '\n' || char === '\r') {
      if (inWord) {
        words.push(word);
        word = '';
        inWord = false;
      }
      index += 1;
      continue;
    }
    if (char === '\\' && text[index + 1] === '\n') {
      // A line continuation joins lines; it is not part of any word.
      index += 2;
      continue;
    }
    inWord = true;
    if (char === "'") {
      const end = text.indexOf("'", index + 1);
      if (end < 0) fail('a single quote is not closed');
      word += text.slice(index + 1, end);
      index = end + 1;
      continue;
    }
    if (char === '"') {
      index += 1;
      let closed = false;
      while (index < text.length) {
        const inner = text[index] as string;
        if (inner === '"') {
          closed = true;
          index += 1;
          break;
        }
        if (inner === '\\' && index + 1 < text.length) {
          const next = text[index + 1] as string;
          if (next === '"' || next === '\\' || next === '$' || next === '`') {
            word += next;
            index += 2;
            continue;
          }
          if (next === '\n') {
            index += 2;
            continue;
          }
        }
        word += inner;
        index += 1;
      }
      if (!closed) fail('a double quote is not closed');
      continue;
    }
    if (char === '\\') {
      if (index + 1 >= text.length) fail('it ends with a backslash');
      const next = text[index + 1] as string;
      if (next !== '\n') word += next;
      index += 2;
      continue;
    }
    word += char;
    index += 1;
  }
  if (inWord) words.push(word);
  return words;
}
