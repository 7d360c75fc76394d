/**
 * CSV reading and writing shared by the imports and exports: UTF-8 (a BOM is ignored), commas,
 * RFC 4180 quoting, `\n` or `\r\n` line ends; rows carry their physical line number (the header is
 * line 1), so that errors point at the line a person sees in an editor.
 *
 * Every data cell svc writes goes through {@link neutraliseCell} (docs/decisions.md, "CSV and
 * spreadsheets"): a cell a spreadsheet would read as a formula gets a leading `'`. The imports of
 * files svc exports (contacts, users) give each cell to {@link unneutraliseCell}, which removes
 * exactly that `'`, so export → import → export gives the same bytes.
 *
 * The parser (papaparse) loads at the first import of a file: the exports write their few quoting
 * rules themselves ({@link toCsv}), so a server that never imports CSV never compiles it (in the
 * bundle it is a file of its own, `tools/finish_bundle.ts`).
 */
// @ts-types="@types/papaparse"
import type Papa from "papaparse";

export interface CsvRow {
  /** Physical line number where the row starts; the header is line 1. */
  line: number;
  fields: string[];
}

export interface CsvTable {
  header: string[];
  rows: CsvRow[];
}

/** papaparse, loaded by the first {@link parseCsv}. */
let papaparse: Promise<typeof Papa> | undefined;

/**
 * Parses `text`; blank lines are skipped.
 *
 * @example
 * const { header, rows } = await parseCsv("firstname,lastname\nAlice,Martin\n");
 */
export async function parseCsv(text: string): Promise<CsvTable> {
  const Papa = await (papaparse ??= import("papaparse").then((module) => module.default));
  // one line end for the whole file, so that files mixing \n and \r\n parse as a person reads them
  const body = (text.startsWith("\uFEFF") ? text.slice(1) : text).replaceAll("\r\n", "\n");
  const records: CsvRow[] = [];
  let line = 1; // line of `start`
  let start = 0; // where the current row begins: the previous row's end
  Papa.parse<string[]>(body, {
    newline: "\n",
    step: (result) => {
      const blank = result.data.length === 1 && result.data[0]!.trim() === "";
      if (!blank) records.push({ line, fields: result.data });
      line += countNewlines(body, start, result.meta.cursor);
      start = result.meta.cursor;
    },
  });
  const [header, ...rows] = records;
  return { header: header?.fields.map((name) => name.trim()) ?? [], rows };
}

function countNewlines(text: string, from: number, to: number): number {
  let count = 0;
  for (let i = text.indexOf("\n", from); i !== -1 && i < to; i = text.indexOf("\n", i + 1)) count++;
  return count;
}

/**
 * A cell as papaparse's `unparse` writes it: in quotes (its own doubled) when it holds a comma, a
 * quote, a line end or a BOM, or starts or ends with a space; else as it is.
 */
function csvCell(cell = ""): string {
  return /[,"\r\n\uFEFF]|^ | $/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell;
}

/**
 * Writes rows under `header`, quoting only where RFC 4180 needs it, with CRLF line ends: the bytes
 * papaparse's `unparse` writes (a test compares them), each row cut or filled to the header's
 * length.
 *
 * @example
 * toCsv(["firstname"], [["Alice"]]); // "firstname\r\nAlice\r\n"
 */
export function toCsv(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const lines = header.length || !rows.length
    ? [header.map((name) => csvCell(name)).join(",")]
    : [];
  for (const row of rows) {
    const cells = row.map(neutraliseCell);
    if (!header.length) lines.push(cells.map((cell) => csvCell(cell)).join(","));
    else lines.push(row.length ? header.map((_, i) => csvCell(cells[i])).join(",") : "");
  }
  return lines.map((line) => `${line}\r\n`).join("");
}

/**
 * A phone number as svc leaves it unneutralised although it starts with `+`: `+`, then only ASCII
 * digits, spaces, dots, dashes and parentheses, with at least one digit (`+33 6 12 34 56 78`,
 * `+1-555-0100`, `+33 (0)6 12 34 56 78`). A spreadsheet reads such a cell as a number or as
 * arithmetic on numbers at worst: no function call, no reference, no DDE (they need letters or
 * `!`, `|`, `:`).
 */
const PHONE_NUMBER = /^\+[0-9 .()-]*[0-9][0-9 .()-]*$/;

/**
 * True when a spreadsheet could read `cell` as a formula (OWASP "CSV injection"): it starts with
 * `=`, `@`, a tab or a CR, or with `-`, or with `+` and is not a {@link PHONE_NUMBER}.
 *
 * @example
 * isFormulaLike("=1+1"); // true
 * isFormulaLike("+33 6 12 34 56 78"); // false
 * isFormulaLike("-"); // true
 */
export function isFormulaLike(cell: string): boolean {
  switch (cell[0]) {
    case "=":
    case "@":
    case "\t":
    case "\r":
    case "-":
      return true;
    case "+":
      return !PHONE_NUMBER.test(cell);
    default:
      return false;
  }
}

/**
 * Whether the export puts a `'` before `cell`: when the cell, once its own leading `'`s are set
 * aside, is {@link isFormulaLike}. A value that starts with `'` followed by a formula (`'=x`) gets
 * one more (`''=x`), so that the import, which removes one, gives it back as it was.
 */
function needsQuote(cell: string): boolean {
  let start = 0;
  while (cell[start] === "'") start++;
  return isFormulaLike(start ? cell.slice(start) : cell);
}

/**
 * A cell as svc writes it in a CSV export: `'` + `cell` when a spreadsheet could read it as a
 * formula (see {@link isFormulaLike}; `'=x` too, see `needsQuote`), else `cell` unchanged. A
 * spreadsheet shows the cell as text, without the `'`.
 *
 * @example
 * neutraliseCell('=HYPERLINK("http://x","y")'); // `'=HYPERLINK("http://x","y")`
 * neutraliseCell("+33612345678"); // "+33612345678"
 * neutraliseCell("-5"); // "'-5"
 * neutraliseCell("'=x"); // "''=x"
 * neutraliseCell("'hello"); // "'hello"
 */
export function neutraliseCell(cell: string): string {
  return needsQuote(cell) ? `'${cell}` : cell;
}

/**
 * The value of a cell of a file svc exported: the leading `'` removed when the rest is a cell
 * {@link neutraliseCell} would have quoted, else `cell` unchanged. So
 * `unneutraliseCell(neutraliseCell(v)) === v` for every string `v`, and a `'` that was not svc's
 * (`'hello`, `'+33 6 12 34 56 78`) stays.
 *
 * @example
 * unneutraliseCell("'=1+1"); // "=1+1"
 * unneutraliseCell("''=x"); // "'=x"
 * unneutraliseCell("'hello"); // "'hello"
 */
export function unneutraliseCell(cell: string): string {
  return cell.startsWith("'") && needsQuote(cell.slice(1)) ? cell.slice(1) : cell;
}
