/**
 * `tools/finish_bundle.ts`, the last step of `deno task bundle`: Node built-ins required at their
 * first use, the docs files gzipped, a source in ASCII only, the code only `import()` reaches kept
 * as text, each run as a module to show that it means what it meant.
 */
import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";
import { GZIP_MARK } from "../../routes/docs_page.ts";
import {
  asciiOnly,
  coldModules,
  EAGER_REQUIRE,
  gzipDocsFiles,
  lazyBuiltins,
} from "../../tools/finish_bundle.ts";
import { importSource as load } from "../helpers.ts";

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

/** The bundler's helpers for modules it wraps, as `deno bundle` writes them. */
const WRAPPERS = `var __getOwnPropNames = Object.getOwnPropertyNames;
var __esm = (fn, res) => function __init() {
  return fn && (res = (0, fn[__getOwnPropNames(fn)[0]])(fn = 0)), res;
};
var __commonJS = (cb, mod) => function __require2() {
  return mod || (0, cb[__getOwnPropNames(cb)[0]])((mod = { exports: {} }).exports, mod), mod.exports;
};
var __export = (target, all) => {
  for (var name in all)
    Object.defineProperty(target, name, { get: all[name], enumerable: true });
};
var __toESM = (mod) => ({ default: mod, ...mod });
`;

/**
 * A bundle as `deno bundle` writes one whose entry imports `shared.ts` and, with `import()`,
 * `heavy.ts` (which imports `shared.ts` too) and the CommonJS `parser.js`.
 */
const WITH_IMPORTS = `${WRAPPERS}
// shared.ts
var shared, loads;
var init_shared = __esm({
  "shared.ts"() {
    shared = "shared";
    loads = { heavy: 0, parser: 0 };
  }
});

// heavy.ts
var heavy_exports = {};
__export(heavy_exports, {
  heavy: () => heavy
});
function heavy() {
  return \`heavy \${helper()} \${shared} \${table.get(1)}\`;
}
function helper() {
  return "helper";
}
var table;
var init_heavy = __esm({
  "heavy.ts"() {
    init_shared();
    loads.heavy++;
    table = /* @__PURE__ */ new Map([[1, "one"]]);
  }
});

// parser.js
var require_parser = __commonJS({
  "parser.js"(exports, module) {
    loads.parser++;
    module.exports = { parse: (text) => text.split(",") };
  }
});

// main.ts
init_shared();
function eager() {
  return shared;
}
async function later() {
  const { heavy: heavy2 } = await Promise.resolve().then(() => (init_heavy(), heavy_exports));
  return heavy2();
}
async function parse(text) {
  const { default: parser } = await Promise.resolve().then(() => __toESM(require_parser()));
  return parser.parse(text);
}
export { eager, later, loads, parse };
`;

Deno.test("the code only import() reaches is text until the first import, then runs as before", async () => {
  const { bundle, cold } = coldModules(WITH_IMPORTS);
  assert.equal(cold, 7); // heavy.ts's five statements, parser.js's wrapper, helper()
  // at the start of a line: code; in the text, after an escaped line end
  for (const code of ["function heavy(", "function helper(", "var require_parser", "var table"]) {
    assert.ok(!bundle.includes(`\n${code}`), `${code} is still code`);
    assert.ok(bundle.includes(`\\n${code}`), `${code} is not in the text`);
  }
  assert.ok(bundle.includes("\nfunction eager("), "the code the start runs stays");
  const module = await load(bundle);
  const loads = module.loads as { heavy: number; parser: number };
  assert.equal((module.eager as () => string)(), "shared");
  assert.deepEqual(loads, { heavy: 0, parser: 0 });
  const later = module.later as () => Promise<string>;
  assert.equal(await later(), "heavy helper shared one");
  assert.equal(await later(), "heavy helper shared one");
  assert.deepEqual(await (module.parse as (text: string) => Promise<string[]>)("a,b"), ["a", "b"]);
  assert.deepEqual(loads, { heavy: 1, parser: 1 }, "each module initialised once");
});

Deno.test("what the start names, and import.meta, stay code", async () => {
  const named = WITH_IMPORTS.replace(
    "function eager() {\n  return shared;",
    "function eager() {\n  return helper() + import.meta.url.length;",
  ).replace("function helper() {", "function helper() {\n  import.meta;");
  const { bundle, cold } = coldModules(named);
  assert.equal(cold, 6);
  assert.ok(bundle.includes("\nfunction helper("), "helper() is named at start");
  const module = await load(bundle);
  assert.equal(await (module.later as () => Promise<string>)(), "heavy helper shared one");
});

Deno.test("a bundle without import() is left as it is", () => {
  const bundle = `${WRAPPERS}\nfunction f() {\n  return 1;\n}\nexport { f };\n`;
  assert.deepEqual(coldModules(bundle), { bundle, cold: 0 });
});
