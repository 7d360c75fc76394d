/**
 * CSV reading and writing shared by the imports and exports: UTF-8 (a BOM is ignored), commas,
 * RFC 4180 quoting, `\n` or `\r\n` line ends; rows carry their physical line number (the header is
 * line 1), so that errors point at the line a person sees in an editor.
 */
// @ts-types="@types/papaparse"
import Papa from "papaparse";

export interface CsvRow {
  /** Physical line number where the row starts; the header is line 1. */
  line: number;
  fields: string[];
}

export interface CsvTable {
  header: string[];
  rows: CsvRow[];
}

/**
 * Parses `text`; blank lines are skipped.
 *
 * @example
 * const { header, rows } = parseCsv("firstname,lastname\nAlice,Martin\n");
 */
export function parseCsv(text: string): CsvTable {
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
 * Writes rows under `header`, quoting only where RFC 4180 needs it, with CRLF line ends.
 *
 * @example
 * toCsv(["firstname"], [["Alice"]]); // "firstname\r\nAlice\r\n"
 */
export function toCsv(header: readonly string[], rows: readonly (readonly string[])[]): string {
  if (!rows.length) return `${Papa.unparse([header as string[]], { newline: "\r\n" })}\r\n`;
  return `${
    Papa.unparse({ fields: header as string[], data: rows as string[][] }, { newline: "\r\n" })
  }\r\n`;
}
