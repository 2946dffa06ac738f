/** Control characters shown as `\xHH`, so text from a record or a user cannot drive the terminal (kept apart from the tables: it needs no width tables). */
/** C0, DEL and C1 controls: on a terminal they would move the cursor or recolour it. */
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * `text` with each control character shown as `\xHH`, so a name cannot drive the terminal;
 * with `keepLineBreaks`, `\n` stays (for messages of several lines).
 */
export function escapeControlCharacters(text: string, keepLineBreaks = false): string {
  return text.replace(CONTROL_CHARACTERS, (character) =>
    keepLineBreaks && character === '\n'
      ? character
      : `\\x${character.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}
