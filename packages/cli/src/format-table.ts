/** Text tables for people: columns aligned by display width (string-width), so wide and combined characters line up. */
import stringWidth from 'string-width';

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

const graphemes = new Intl.Segmenter();

export interface TableOptions {
  /** Cut longer cells to this many columns, ending with `…`. Default: no limit. */
  maxCellWidth?: number;
  /** Decorate a body cell (colour) after its width is measured; never changes the alignment. */
  paint?: (cell: string, column: number) => string;
}

/** `text` in at most `width` display columns: whole characters, `…` where it was cut. */
export function clipToWidth(text: string, width: number): string {
  if (stringWidth(text) <= width) return text;
  let kept = '';
  let used = 0;
  for (const { segment } of graphemes.segment(text)) {
    const columns = stringWidth(segment);
    if (used + columns > width - 1) break;
    kept += segment;
    used += columns;
  }
  return `${kept}…`;
}

/**
 * A header and rows as lines of columns two spaces apart, each padded to its widest cell by
 * display width; the last column is not padded. Control characters are shown escaped.
 */
export function formatTable(
  header: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
  options: TableOptions = {},
): string {
  const clean = (cell: string): string => {
    const text = escapeControlCharacters(cell);
    return options.maxCellWidth === undefined ? text : clipToWidth(text, options.maxCellWidth);
  };
  const body = rows.map((row) => row.map(clean));
  const widths = header.map((title, column) =>
    Math.max(stringWidth(title), ...body.map((row) => stringWidth(row[column] ?? ''))),
  );
  const line = (cells: readonly string[], paint: TableOptions['paint']): string =>
    cells
      .map((cell, column) => {
        const shown = paint ? paint(cell, column) : cell;
        if (column === cells.length - 1) return shown;
        return shown + ' '.repeat((widths[column] as number) - stringWidth(cell));
      })
      .join('  ');
  return [line(header, undefined), ...body.map((row) => line(row, options.paint))]
    .map((text) => `${text}\n`)
    .join('');
}
