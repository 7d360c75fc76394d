/**
 * `tools/finish_bundle.ts`, the last step of `deno task bundle`: Node built-ins required at their
 * first use, and a source in ASCII only, both run as modules to show they mean what they meant.
 */
import assert from "node:assert/strict";
import { asciiOnly, EAGER_REQUIRE, lazyBuiltins } from "../../tools/finish_bundle.ts";

/** Imports `source` as a module from a temporary file. */
async function load(source: string): Promise<Record<string, unknown>> {
  const file = await Deno.makeTempFile({ suffix: ".js" });
  try {
    await Deno.writeTextFile(file, source);
    return await import(`file://${file}`);
  } finally {
    await Deno.remove(file);
  }
}

Deno.test("a required built-in loads at the first read of one of its properties", async () => {
  const bundle = `${EAGER_REQUIRE}
var util = __require("node:util");
export const later = () => util.format("%s-%d", "call", 7);
export const Duplex = () => __require("node:stream").Duplex;
`;
  const lazy = lazyBuiltins(bundle);
  assert.ok(!lazy.includes("node:module"), "no import of node:module left");
  const module = await load(lazy);
  assert.equal((module.later as () => string)(), "call-7");
  assert.equal(typeof (module.Duplex as () => unknown)(), "function");
});

Deno.test("a bundle without requires is left as it is", () => {
  const bundle = 'export const x = "no require here";\n';
  assert.equal(lazyBuiltins(bundle), bundle);
});

Deno.test("a require the lazy one cannot stand in for stops the build", () => {
  const cases: [string, RegExp][] = [
    ['var util = __require("node:util");', /not through the expected createRequire/],
    [`${EAGER_REQUIRE}\nvar dep = __require("./dep.js");`, /a require of "\.\/dep\.js"/],
    [`${EAGER_REQUIRE}\nuse(__require("node:util"));`, /used whole/],
  ];
  for (const [bundle, message] of cases) assert.throws(() => lazyBuiltins(bundle), message);
});

Deno.test("characters outside ASCII become escapes meaning the same", async () => {
  const source = 'export const text = "Device \u2192 state, caf\u00e9, \u{1F600}"; // \u2026\n' +
    "export const pattern = /[\u2192]/u;\n";
  const ascii = asciiOnly(source);
  assert.match(ascii, /^[\x20-\x7e\n]*$/);
  const module = await load(ascii);
  assert.equal(module.text, "Device \u2192 state, caf\u00e9, \u{1F600}");
  assert.ok((module.pattern as RegExp).test("\u2192"));
  assert.throws(() => asciiOnly('const s = "\\\u00e9";'), /after a backslash/);
});
