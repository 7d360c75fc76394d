/**
 * `lib/csv.ts`: the formula-neutralising helper pair (docs/decisions.md, "CSV and spreadsheets")
 * and what `toCsv` writes with it: the bytes papaparse's `unparse` wrote before `toCsv` did its
 * quoting itself.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
// @ts-types="@types/papaparse"
import Papa from "papaparse";
import { isFormulaLike, neutraliseCell, parseCsv, toCsv, unneutraliseCell } from "../../lib/csv.ts";

Deno.test("neutraliseCell: formulas get a leading ', phone numbers and plain text do not", async (t) => {
  const cases: [value: string, exported: string][] = [
    ['=HYPERLINK("http://x","y")', `'=HYPERLINK("http://x","y")`],
    ["=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"],
    ["@SUM(1+1)", "'@SUM(1+1)"],
    ["\t=1+1", "'\t=1+1"],
    ["\r=1+1", "'\r=1+1"],
    ["\tplain", "'\tplain"],
    ["-5", "'-5"],
    ["-", "'-"],
    ["-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"],
    ["+foo", "'+foo"],
    ["+", "'+"],
    ["+()", "'+()"],
    ["+33 6 12 34 56 78\n=1", "'+33 6 12 34 56 78\n=1"],
    ["+33\t612345678", "'+33\t612345678"],
    ["+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"],
    // phone numbers: + then digits, spaces, dots, dashes, parentheses, at least one digit
    ["+33612345678", "+33612345678"],
    ["+33 6 12 34 56 78", "+33 6 12 34 56 78"],
    ["+1-555-0100", "+1-555-0100"],
    ["+33 (0)6 12 34 56 78", "+33 (0)6 12 34 56 78"],
    ["+33.6.12.34.56.78", "+33.6.12.34.56.78"],
    ["+1", "+1"],
    // not a formula start
    ["0612345678", "0612345678"],
    ["Alice", "Alice"],
    ["", ""],
    [" =1+1", " =1+1"],
    ["a=1", "a=1"],
    // a value of its own starting with ': one more ' only when a formula follows the quotes
    ["'hello", "'hello"],
    ["'", "'"],
    ["'+33 6 12 34 56 78", "'+33 6 12 34 56 78"],
    ["'=x", "''=x"],
    ["''=x", "'''=x"],
    ["'-5", "''-5"],
    ["'\t", "''\t"],
  ];
  for (const [value, exported] of cases) {
    await t.step(JSON.stringify(value), () => {
      assert.equal(neutraliseCell(value), exported);
      assert.equal(unneutraliseCell(exported), value, "the import gives the value back");
      assert.equal(isFormulaLike(exported), false, "the exported cell is no formula");
    });
  }
});

Deno.test("unneutraliseCell removes exactly svc's ', never one of a value's own", () => {
  const kept = ["'hello", "'", "''", "'+33 6 12 34 56 78", "' =1", "'0612", "plain", "", "=1"];
  for (const cell of kept) assert.equal(unneutraliseCell(cell), cell, JSON.stringify(cell));
  assert.equal(unneutraliseCell("'=1+1"), "=1+1");
  assert.equal(unneutraliseCell("'@SUM(1+1)"), "@SUM(1+1)");
  assert.equal(unneutraliseCell("'-5"), "-5");
  assert.equal(unneutraliseCell("'+foo"), "+foo");
  assert.equal(unneutraliseCell("'\t=1"), "\t=1");
  assert.equal(unneutraliseCell("''=x"), "'=x");
  assert.equal(unneutraliseCell("'''=x"), "''=x");
});

Deno.test("every string up to 4 characters of the tricky alphabet round-trips and exports safe", () => {
  const alphabet = ["'", "=", "+", "-", "@", "\t", "\r", "\n", "1", " ", "a", "(", ")", ".", '"'];
  let values = [""];
  let checked = 0;
  for (let length = 0; length <= 4; length++) {
    for (const value of values) {
      const exported = neutraliseCell(value);
      assert.equal(unneutraliseCell(exported), value, JSON.stringify(value));
      assert.equal(isFormulaLike(exported), false, JSON.stringify(value));
      // export → import → export: the same cell
      assert.equal(neutraliseCell(unneutraliseCell(exported)), exported, JSON.stringify(value));
      // a ' is added only in front of a formula, or of quotes in front of one
      if (exported !== value) {
        assert.equal(exported, `'${value}`);
        assert.ok(isFormulaLike(value.replace(/^'+/, "")), JSON.stringify(value));
      }
      checked++;
    }
    values = values.flatMap((value) => alphabet.map((char) => value + char));
  }
  assert.equal(checked, 1 + 15 + 15 ** 2 + 15 ** 3 + 15 ** 4);
});

Deno.test("toCsv neutralises every data cell, never the header; parseCsv + unneutraliseCell read it back", async () => {
  const header = ["=name", "number"];
  const rows = [
    ["=1+1", "+33 6 12 34 56 78"],
    ['=HYPERLINK("http://x","y")', "-5"],
    ["'=x", "\r=1"],
  ];
  const csv = toCsv(header, rows);
  assert.equal(
    csv,
    '=name,number\r\n\'=1+1,+33 6 12 34 56 78\r\n"\'=HYPERLINK(""http://x"",""y"")",\'-5\r\n' +
      "''=x,\"'\r=1\"\r\n",
  );
  const table = await parseCsv(csv);
  assert.deepEqual(table.header, header);
  assert.deepEqual(table.rows.map((row) => row.fields.map(unneutraliseCell)), rows);
  assert.equal(toCsv(header, table.rows.map((row) => row.fields.map(unneutraliseCell))), csv);
  assert.equal(toCsv(["=a"], []), "=a\r\n");
});

Deno.test("toCsv writes what papaparse's unparse writes, rows cut or filled to the header", () => {
  const unparse = (header: string[], rows: string[][]) =>
    `${
      rows.length
        ? Papa.unparse({ fields: header, data: rows.map((row) => row.map(neutraliseCell)) }, {
          newline: "\r\n",
        })
        : Papa.unparse([header], { newline: "\r\n" })
    }\r\n`;
  const tricky = fc.string({
    unit: fc.constantFrom("a", " ", ",", '"', "\r", "\n", "\uFEFF", "=", "'", "-", "+", "\t"),
  });
  const cell = fc.oneof(fc.string(), tricky);
  fc.assert(
    fc.property(
      fc.array(cell, { maxLength: 4 }),
      fc.array(fc.array(cell, { maxLength: 6 }), { maxLength: 4 }),
      (header, rows) => assert.equal(toCsv(header, rows), unparse(header, rows)),
    ),
    { numRuns: 5_000 },
  );
});
