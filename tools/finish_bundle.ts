/**
 * The second step of `deno task bundle`: finishes the bundle (`dist/svc.js`) in place. Each step
 * checks that the bundler wrote what it expects and stops the task otherwise.
 *
 * 1. The git revision of the repository goes in place of `lib/version.ts`'s {@link REVISION_SLOT},
 *    so that `GET /version` of a bundle run anywhere tells the revision it was built from
 *    (`unknown` when built outside git).
 * 2. Node built-ins load at their first use ({@link lazyBuiltins}): the bundler imports
 *    `node:module` at the top of the file for the CommonJS packages' `require("node:…")`
 *    (prom-client's `node:util`, papaparse's `node:stream`, yaml's `node:process`), and that one
 *    import loads Deno's Node layer at every start: 13 ms and 8 MB (bench/README.md), for modules
 *    those packages use only on error paths or in code svc never runs.
 * 3. The large Swagger UI files of the docs page are stored gzipped ({@link gzipDocsFiles}): V8
 *    holds the bundle's whole source in memory, and they were 1.9 MB of its 3.1 MB.
 * 4. Every character outside ASCII is written as a `\uXXXX` escape ({@link asciiOnly}): V8 keeps a
 *    source holding one such character (a `→` in a comment is enough) in two bytes per character,
 *    twice the bundle's size in memory.
 */
import { gzipSync } from "node:zlib";
import { gitRevision, REVISION_SLOT } from "../lib/version.ts";
import { SWAGGER_UI_FILES } from "../routes/docs_assets.ts";
import { GZIP_MARK } from "../routes/docs_page.ts";

/** What the bundler (deno bundle 2.9) writes when a CommonJS package requires a Node built-in. */
export const EAGER_REQUIRE =
  'import { createRequire as __deno_internal_createRequire } from "node:module";\n' +
  "var __require = __deno_internal_createRequire(import.meta.url);";

/**
 * `require` of a Node built-in answering an object that loads the module at the first read of one
 * of its properties (`process.getBuiltinModule`). The bundled packages only read properties of
 * what they require (`util.format`, `require("node:stream").Duplex`), which the end of the
 * bundle's build checks: a `__require` result passed whole elsewhere stops it.
 */
const LAZY_REQUIRE = "var __require = (id) => new Proxy({}, { get: (_, key) => " +
  "globalThis.process.getBuiltinModule(id)[key] });";

/** The bundle with its `require` of Node built-ins made lazy (see the module comment). */
export function lazyBuiltins(bundle: string): string {
  const calls = [...bundle.matchAll(/__require\((.*?)\)/g)];
  if (calls.length === 0) return bundle;
  if (!bundle.includes(EAGER_REQUIRE)) {
    throw new Error("the bundle requires modules, but not through the expected createRequire");
  }
  for (const call of calls) {
    const use = bundle.slice(call.index - 40, call.index + call[0].length + 1);
    if (!/^"node:[a-z_/]+"$/.test(call[1]!)) throw new Error(`a require of ${call[1]}: ${use}`);
    // `var name = __require(…);` or `__require(…).property`: only properties are read
    if (!/(var \w+ = __require\(.*?\);|__require\(.*?\)\.)$/.test(use)) {
      throw new Error(`a required module used whole: ${use}`);
    }
  }
  return bundle.replace(EAGER_REQUIRE, LAZY_REQUIRE);
}

/** Files smaller than this stay text: the two Swagger UI files above it are 188 KB and 1.7 MB. */
const GZIP_FROM = 100_000;

/**
 * The bundle with each string literal holding the text of one of `files` of {@link GZIP_FROM}
 * characters or more replaced by the file gzipped (`routes/docs_page.ts`'s `GZIP_MARK`, then the
 * base64 of the gzip bytes). The bundler writes such a text on a line of its own, as
 * `name = "…";` (`var name = …` in a module it does not wrap); each file must be found once.
 */
export function gzipDocsFiles(bundle: string, files: readonly string[]): string {
  const large = files.filter((text) => text.length >= GZIP_FROM);
  const found = new Map<string, number>();
  const result = bundle.replace(
    /^(\s*(?:(?:var|let|const) )?[\w$]+ = )((["'`]).{100000,}\3);$/gm,
    (line, assignment: string, literal: string) => {
      const value = new Function(`return ${literal};`)() as unknown;
      if (typeof value !== "string" || !large.includes(value)) return line;
      found.set(value, (found.get(value) ?? 0) + 1);
      const bytes = gzipSync(new TextEncoder().encode(value), { level: 9 });
      return `${assignment}${JSON.stringify(GZIP_MARK + bytes.toBase64())};`;
    },
  );
  for (const text of large) {
    const times = found.get(text) ?? 0;
    if (times !== 1) throw new Error(`a docs file found ${times} times: ${text.slice(0, 60)}`);
  }
  return result;
}

/** `source` with every UTF-16 code unit outside ASCII written as a `\uXXXX` escape. */
export function asciiOnly(source: string): string {
  const escaped = source.match(/\\[\u0080-\uffff]/);
  // after a backslash the escape would be read as an escaped backslash followed by "uXXXX"
  if (escaped) throw new Error(`a character outside ASCII after a backslash: ${escaped[0]}`);
  return source.replace(
    /[\u0080-\uffff]/g,
    (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

if (import.meta.main) {
  const [file] = Deno.args;
  if (!file) {
    console.error("usage: finish_bundle.ts BUNDLE_FILE");
    Deno.exit(2);
  }
  const bundle = await Deno.readTextFile(file);
  if (!bundle.includes(REVISION_SLOT)) {
    console.error(`finish_bundle: ${file} holds no revision slot ${REVISION_SLOT}`);
    Deno.exit(1);
  }
  const revision = gitRevision(new URL("../", import.meta.url)) ?? "unknown";
  try {
    const stamped = bundle.replaceAll(REVISION_SLOT, revision);
    const docsFiles = Object.values(SWAGGER_UI_FILES).map(({ text }) => text);
    const finished = asciiOnly(gzipDocsFiles(lazyBuiltins(stamped), docsFiles));
    await Deno.writeTextFile(file, finished);
  } catch (error) {
    console.error(`finish_bundle: ${file}: ${(error as Error).message}`);
    Deno.exit(1);
  }
}
