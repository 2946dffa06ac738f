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

/** A table laid out: its header line, and the lines of any run of its rows. */
export interface TableLayout {
  readonly header: string;
  /** Rows `from` to `to` (not included), each line ending in a newline. */
  lines(from: number, to: number): string;
}

/**
 * A header and rows as lines of columns two spaces apart, each padded to its widest cell by
 * display width; the last column is not padded. Control characters are shown escaped. The
 * widths are measured once, so the lines can be written a run at a time.
 */
export function layoutTable(
  header: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
  options: TableOptions = {},
): TableLayout {
  const clean = (cell: string): string => {
    const text = escapeControlCharacters(cell);
    return options.maxCellWidth === undefined ? text : clipToWidth(text, options.maxCellWidth);
  };
  const body = rows.map((row) => row.map(clean));
  const cellWidths = body.map((row) => row.map((cell) => stringWidth(cell)));
  // A loop, not Math.max(...): a spread of a long listing's rows would overflow the stack.
  const widths = header.map((title) => stringWidth(title));
  for (const row of cellWidths)
    row.forEach((width, column) => {
      if (width > (widths[column] as number)) widths[column] = width;
    });
  const line = (
    cells: readonly string[],
    measured: readonly number[],
    paint: TableOptions['paint'],
  ): string =>
    `${cells
      .map((cell, column) => {
        const shown = paint ? paint(cell, column) : cell;
        if (column === cells.length - 1) return shown;
        return shown + ' '.repeat((widths[column] as number) - (measured[column] as number));
      })
      .join('  ')}\n`;
  return {
    header: line(
      header,
      header.map((title) => stringWidth(title)),
      undefined,
    ),
    lines: (from, to) => {
      let text = '';
      for (let row = from; row < Math.min(to, body.length); row += 1)
        text += line(body[row] as string[], cellWidths[row] as number[], options.paint);
      return text;
    },
  };
}

/** A header and rows as one text: `layoutTable`'s lines, all of them. */
export function formatTable(
  header: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
  options: TableOptions = {},
): string {
  const table = layoutTable(header, rows, options);
  return table.header + table.lines(0, rows.length);
}
