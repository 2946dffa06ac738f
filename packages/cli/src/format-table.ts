/** Text tables for people: columns aligned by display width (string-width), so wide and combined characters line up. */
import stringWidth from 'string-width';
import { escapeControlCharacters } from './escape-control-characters.js';

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
 * A header and `count` rows (their cells given by `cell`) as lines of columns two spaces
 * apart, each padded to its widest cell by display width; the last column is not padded.
 * Control characters are shown escaped. The widths are measured once, so the lines can be
 * written a run at a time; the cells are kept in one flat array (a long listing's rows are many).
 */
export function layoutTable(
  header: readonly string[],
  count: number,
  cell: (row: number, column: number) => string,
  options: TableOptions = {},
): TableLayout {
  const columns = header.length;
  const cells: string[] = new Array(count * columns);
  const cellWidths = new Uint32Array(count * columns);
  const widths = header.map((title) => stringWidth(title));
  for (let row = 0; row < count; row += 1) {
    for (let column = 0; column < columns; column += 1) {
      const at = row * columns + column;
      cells[at] = fitCell(cell(row, column), options.maxCellWidth, cellWidths, at);
      const width = cellWidths[at] as number;
      if (width > (widths[column] as number)) widths[column] = width;
    }
  }
  // One string of spaces for each padding width, however many cells it pads.
  const spaces: string[] = [];
  const pad = (width: number): string => (spaces[width] ??= ' '.repeat(width));
  const line = (
    texts: readonly string[],
    measured: ArrayLike<number>,
    base: number,
    paint: TableOptions['paint'],
  ): string => {
    let text = '';
    for (let column = 0; column < columns; column += 1) {
      const content = texts[base + column] as string;
      const shown = paint ? paint(content, column) : content;
      if (column > 0) text += '  ';
      text += shown;
      if (column < columns - 1)
        text += pad((widths[column] as number) - (measured[base + column] as number));
    }
    return `${text}\n`;
  };
  return {
    header: line(
      header,
      header.map((title) => stringWidth(title)),
      0,
      undefined,
    ),
    lines: (from, to) => {
      let text = '';
      for (let row = from; row < Math.min(to, count); row += 1)
        text += line(cells, cellWidths, row * columns, options.paint);
      return text;
    },
  };
}

/** Printable ASCII: one column a character, nothing to escape (most cells of most tables). */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * A cell escaped and cut to `maxWidth` columns, its display width stored at `widths[at]` (no
 * pair made for each of a long table's many cells).
 */
function fitCell(
  cell: string,
  maxWidth: number | undefined,
  widths: Uint32Array,
  at: number,
): string {
  if (PRINTABLE_ASCII.test(cell)) {
    if (maxWidth === undefined || cell.length <= maxWidth) {
      widths[at] = cell.length;
      return cell;
    }
    widths[at] = maxWidth;
    return `${cell.slice(0, maxWidth - 1)}…`;
  }
  let text = escapeControlCharacters(cell);
  if (maxWidth !== undefined) text = clipToWidth(text, maxWidth);
  widths[at] = stringWidth(text);
  return text;
}

/** A header and rows as one text: `layoutTable`'s lines, all of them. */
export function formatTable(
  header: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
  options: TableOptions = {},
): string {
  const table = layoutTable(
    header,
    rows.length,
    (row, column) => rows[row]?.[column] ?? '',
    options,
  );
  return table.header + table.lines(0, rows.length);
}
