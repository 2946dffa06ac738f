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
