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
 * 3. Every character outside ASCII is written as a `\uXXXX` escape ({@link asciiOnly}): V8 keeps a
 *    source holding one such character (a `→` in a comment is enough) in two bytes per character,
 *    twice the bundle's size in memory.
 */
import { gitRevision, REVISION_SLOT } from "../lib/version.ts";

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
    const finished = asciiOnly(lazyBuiltins(bundle.replaceAll(REVISION_SLOT, revision)));
    await Deno.writeTextFile(file, finished);
  } catch (error) {
    console.error(`finish_bundle: ${file}: ${(error as Error).message}`);
    Deno.exit(1);
  }
}
