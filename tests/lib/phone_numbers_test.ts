import assert from "node:assert/strict";
import { sanitizeNumber } from "../../lib/phone_numbers.ts";

const cases: [string, string][] = [
  // the examples of decisions §5
  ["+33 (0)6 12 34 56 78", "0033612345678"],
  ["+33 06 12 34 56 78", "00330612345678"],
  ["06.12.34.56.78", "0612345678"],
  ["(555) 123-4567", "5551234567"],
  ["*8", "*8"],
  // more
  ["1001", "1001"],
  ["  +44 (0)20 7946 0958 ", "00442079460958"],
  ["+1-202-555-0143", "0012025550143"],
  ["0033 6 12 34 56 78", "0033612345678"],
  ["+33(0)612345678", "0033612345678"],
  ["(0)612345678", "612345678"],
  ["#31#0612345678", "#31#0612345678"],
  ["*67 555 0100", "*675550100"],
  ["tel:+33612345678", "33612345678"], // a + that does not lead is only removed
  ["06 12 34 56 78 ext. 12", "061234567812"],
  ["+", "00"],
  ["abc", ""],
  ["", ""],
  ["(0)", ""],
  ["٠٦١٢", ""], // digits of other scripts are not dialable
  ["+33 6 12 34 56 78\n", "0033612345678"],
  // (0) goes first, wherever it stands, so a + it hid still leads
  ["+(0)33 6 12", "0033612"],
  ["(0)+33 6 12", "0033612"],
  ["0(0)1", "01"],
  ["1 (0) 2", "12"],
  ["(00)33", "0033"], // only the exact text (0) is the hidden trunk zero
  ["( 0 )612", "0612"],
  ["++33 6", "00336"], // only the leading + becomes 00, the second is removed
  ["+ 33 6", "00336"],
  ["\t+41 22 123 45 67", "0041221234567"],
  ["0800 123 456", "0800123456"],
  ["+1 (800) 555-0199", "0018005550199"],
  ["*31#+33612345678", "*31#33612345678"],
  ["１２３", ""], // full-width digits are not dialable either
];

Deno.test("dial numbers are sanitized as decisions §5 says", async (t) => {
  for (const [raw, expected] of cases) {
    await t.step(`${JSON.stringify(raw)} → ${JSON.stringify(expected)}`, () => {
      assert.equal(sanitizeNumber(raw), expected);
    });
  }
});
