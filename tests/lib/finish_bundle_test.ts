/**
 * `tools/finish_bundle.ts`, the last step of `deno task bundle`: Node built-ins required at their
 * first use, the docs files gzipped, a source in ASCII only, the files of the bundle in place and
 * imported at their first use, each run as a module to show that it means what it meant.
 */
import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";
import { GZIP_MARK } from "../../routes/docs_page.ts";
import {
  asciiOnly,
  EAGER_REQUIRE,
  gzipDocsFiles,
  importedOnFirstUse,
  importsFromParts,
  lazyBuiltins,
  PARTS_DIR,
} from "../../tools/finish_bundle.ts";
import { importSource as load } from "../helpers.ts";
import { writeFiles } from "../../tools/eager_start.ts";

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

/** Writes `files` (name → text) to a new folder; returns it. */
async function written(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir();
  await writeFiles(dir, Object.entries(files));
  return dir;
}

/** An entry and two files as `deno bundle --code-splitting` writes them, side by side. */
const SPLIT = {
  "main.js": `import { shared } from "./chunk-ABC.js";
import "./chunk-DEF.js";
export async function later() {
  const { heavy } = await import("./heavy-GHI.js");
  return heavy() + " " + shared;
}
export { shared };
export * from "./chunk-DEF.js";
`,
  "chunk-ABC.js": 'export const shared = "shared";\n',
  "chunk-DEF.js": 'export const side = "side";\n',
  "heavy-GHI.js": `import { shared } from "./chunk-ABC.js";
export const heavy = () => "heavy " + shared;
export const again = () => import("./chunk-DEF.js").then(({ side }) => side);
`,
};

Deno.test("the entry imports the bundle's files from svc-parts/, by import() at their first use", async () => {
  const entry = importedOnFirstUse(importsFromParts(SPLIT["main.js"]));
  assert.ok(!/from "\.\/chunk/.test(entry), "every static import names svc-parts/");
  assert.ok(entry.includes('"./svc-parts/chunk-DEF.js"'));
  // a written name in import() is a file Deno reads at every start, run or not
  assert.ok(!/(?<!__svc_)import\("/.test(entry), "an import() of a written name is left");
  assert.ok(entry.includes('__svc_import("./svc-parts/heavy-GHI.js")'));
  const heavy = importedOnFirstUse(SPLIT["heavy-GHI.js"]);
  assert.ok(
    heavy.includes('__svc_import("./chunk-DEF.js")'),
    "the parts name one another as before",
  );
  const dir = await written({
    "svc.js": entry,
    [`${PARTS_DIR}/chunk-ABC.js`]: SPLIT["chunk-ABC.js"],
    [`${PARTS_DIR}/chunk-DEF.js`]: SPLIT["chunk-DEF.js"],
    [`${PARTS_DIR}/heavy-GHI.js`]: heavy,
  });
  try {
    const module = await import(`file://${dir}/svc.js`);
    assert.equal(module.side, "side");
    assert.equal(await module.later(), "heavy shared shared");
    const part = await import(`file://${dir}/${PARTS_DIR}/heavy-GHI.js`);
    assert.equal(await part.again(), "side", "an import() in a part resolves against the part");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a file without import() is left as it is; one naming the helper stops the build", () => {
  assert.equal(importedOnFirstUse(SPLIT["chunk-ABC.js"]), SPLIT["chunk-ABC.js"]);
  assert.throws(
    () => importedOnFirstUse('var __svc_import = 1;\nimport("./x.js");\n'),
    /already names __svc_import/,
  );
});

Deno.test("a file using the require another defines is checked, and left to it", async () => {
  const defining = `${EAGER_REQUIRE}\nexport { __require };\n`;
  const using = `import {\n  __require\n} from "./chunk-REQ.js";
var util = __require("node:util");
export const later = () => util.format("%s-%d", "call", 7);
`;
  const lazy = lazyBuiltins(defining);
  assert.ok(!lazy.includes("node:module"), "the defining file loads no built-in at start");
  assert.equal(lazyBuiltins(using), using);
  assert.throws(
    () => lazyBuiltins(using.replace("__require\n}", "other\n}")),
    /not through the expected createRequire/,
  );
  const dir = await written({ "chunk-REQ.js": lazy, "main.js": using });
  try {
    const module = await import(`file://${dir}/main.js`);
    assert.equal(module.later(), "call-7");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
