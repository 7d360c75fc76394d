/**
 * `tools/finish_bundle.ts`, the last step of `deno task bundle`: Node built-ins required at their
 * first use, the docs files gzipped, a source in ASCII only, each run as a module to show that it
 * means what it meant.
 */
import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";
import { GZIP_MARK } from "../../routes/docs_page.ts";
import {
  asciiOnly,
  EAGER_REQUIRE,
  gzipDocsFiles,
  lazyBuiltins,
} from "../../tools/finish_bundle.ts";

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

Deno.test("a large docs file's literal becomes its gzip bytes, after the mark", async () => {
  const css = `.a{content:"it's \\"quoted\\""}\n`.repeat(4_000); // both quotes, backslashes
  const small = "MIT License";
  const bundle = `var small_default = ${JSON.stringify(small)};
var css_default;
var init_css = () => {
    css_default = ${JSON.stringify(css)};
};
init_css();
export { css_default, small_default };
`;
  const finished = gzipDocsFiles(bundle, [css, small]);
  assert.ok(finished.length < bundle.length / 10);
  const module = await load(finished);
  assert.equal(module.small_default, small, "a small file stays text");
  const stored = module.css_default as string;
  assert.ok(stored.startsWith(GZIP_MARK));
  const bytes = Uint8Array.fromBase64(stored.slice(GZIP_MARK.length));
  assert.equal(new TextDecoder().decode(gunzipSync(bytes)), css);
  assert.throws(() => gzipDocsFiles(bundle, [css, "x".repeat(200_000)]), /found 0 times/);
  const twice = bundle.replace("init_css();", `const again = ${JSON.stringify(css)};`);
  assert.throws(() => gzipDocsFiles(twice, [css]), /found 2 times/);
});
