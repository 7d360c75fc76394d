/**
 * The second step of `deno task bundle`: finishes what `deno bundle --code-splitting` wrote and
 * puts it in place, the entry as `dist/svc.js` and the files it imports in `dist/svc-parts/`
 * ({@link importsFromParts}). Code splitting gives the code only a dynamic `import()` reaches (the
 * API areas, the Asterisk adapter, the docs page's files, single sign-on, the YAML writer…) files
 * of their own, read at their first use: the first start of a file Deno has not run before parses
 * all of its code (docs/performance.md), and each file keeps its own V8 code cache. Each step
 * checks that the bundler wrote what it expects and stops the task otherwise.
 *
 * 1. The git revision of the repository goes in place of `lib/version.ts`'s {@link REVISION_SLOT},
 *    so that `GET /version` of a bundle run anywhere tells the revision it was built from
 *    (`unknown` when built outside git).
 * 2. Node built-ins load at their first use ({@link lazyBuiltins}): the bundler imports
 *    `node:module` for the CommonJS packages' `require("node:…")` (prom-client's `node:util`,
 *    papaparse's `node:stream`, yaml's `node:process`), and that one import loads Deno's Node
 *    layer at every start: 13 ms and 8 MB (bench/README.md), for modules those packages use only
 *    on error paths or in code svc never runs.
 * 3. The large Swagger UI files of the docs page are stored gzipped ({@link gzipDocsFiles}): V8
 *    holds a file's whole source in memory, and they are 1.9 MB.
 * 4. Every character outside ASCII is written as a `\uXXXX` escape ({@link asciiOnly}): V8 keeps a
 *    source holding one such character (a `→` in a comment is enough) in two bytes per character,
 *    twice the file's size in memory.
 * 5. The functions a start runs are compiled with their file, so that V8's code cache holds them
 *    (`tools/eager_start.ts`): the finished bundle is started once to find them, which also
 *    checks that it serves.
 */
import { gzipSync } from "node:zlib";
import { gitRevision, REVISION_SLOT } from "../lib/version.ts";
import { compiledWithBundle, functionsRunAtStart, writeFiles } from "./eager_start.ts";
import { isNode, type Node, parse } from "./syntax.ts";
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

/** Whether a file of the bundle imports `__require` from another (the one defining it). */
const importsRequire = (file: string) =>
  /^import \{[^}]*\b__require\b[^}]*\} from "\.\/[\w.-]+";$/m.test(file);

/**
 * A file of the bundle with the `require` of Node built-ins it defines made lazy (see the module
 * comment), and its uses of `require` checked.
 */
export function lazyBuiltins(file: string): string {
  const defines = file.includes(EAGER_REQUIRE);
  const calls = [...file.matchAll(/__require\((.*?)\)/g)];
  if (calls.length && !defines && !importsRequire(file)) {
    throw new Error("the bundle requires modules, but not through the expected createRequire");
  }
  for (const call of calls) {
    const use = file.slice(call.index - 40, call.index + call[0].length + 1);
    if (!/^"node:[a-z_/]+"$/.test(call[1]!)) throw new Error(`a require of ${call[1]}: ${use}`);
    // `var name = __require(…);` or `__require(…).property`: only properties are read
    if (!/(var \w+ = __require\(.*?\);|__require\(.*?\)\.)$/.test(use)) {
      throw new Error(`a required module used whole: ${use}`);
    }
  }
  return defines ? file.replace(EAGER_REQUIRE, LAZY_REQUIRE) : file;
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

/** The folder beside the bundle's entry (`dist/svc.js`) holding the files it imports. */
export const PARTS_DIR = "svc-parts";

/** The statements and expressions importing a file of the bundle (`"./x.js"`) in a file. */
const IMPORTS = ["ImportDeclaration", "ExportNamedDeclaration", "ExportAllDeclaration"];

/**
 * The imports of other files of the bundle in `file` (their source a written `"./…"`): static
 * ones and `import()` expressions, or with `dynamicOnly` the latter alone.
 */
function importsIn(file: string, dynamicOnly = false): Node[] {
  const found: Node[] = [];
  const visit = (node: Node) => {
    const source = node.source;
    if (
      (node.type === "ImportExpression" || (!dynamicOnly && IMPORTS.includes(node.type))) &&
      isNode(source) && source.type === "Literal" && typeof source.value === "string" &&
      source.value.startsWith("./")
    ) found.push(node);
    for (const value of Object.values(node)) {
      for (const child of Array.isArray(value) ? value : [value]) if (isNode(child)) visit(child);
    }
  };
  visit(parse(file));
  return found.sort((a, b) => a.start - b.start);
}

/** The `import("./…")` expressions of a file: of another file of the bundle, by a written name. */
export const writtenImports = (file: string): Node[] => importsIn(file, true);

/** `text` with each range of `edits` replaced by its text (the ranges in order, apart). */
function edited(text: string, edits: { start: number; end: number; text: string }[]): string {
  let result = "";
  let copied = 0;
  for (const edit of edits) {
    result += text.slice(copied, edit.start) + edit.text;
    copied = edit.end;
  }
  return result + text.slice(copied);
}

/**
 * Copies the bundle whose entry is `entry` (`svc.js`, beside its {@link PARTS_DIR} folder) to the
 * new folder `to`; returns the copy's entry. Files at new paths: Deno has run none of them.
 */
export async function copyBundle(entry: string, to: string): Promise<string> {
  const from = entry.slice(0, entry.lastIndexOf("/"));
  await Deno.mkdir(`${to}/${PARTS_DIR}`, { recursive: true });
  await Deno.copyFile(entry, `${to}/svc.js`);
  for await (const { name } of Deno.readDir(`${from}/${PARTS_DIR}`)) {
    await Deno.copyFile(`${from}/${PARTS_DIR}/${name}`, `${to}/${PARTS_DIR}/${name}`);
  }
  return `${to}/svc.js`;
}

/**
 * `entry` (the bundler's entry file) with each import of a file of the bundle (`"./x.js"`,
 * statically or by `import()`) naming it in {@link PARTS_DIR}: the entry goes one folder up, the
 * other files stay together (their imports of one another are unchanged).
 */
export function importsFromParts(entry: string): string {
  return edited(
    entry,
    importsIn(entry).map(({ source }) => {
      const { start, end, value } = source as Node;
      return { start, end, text: JSON.stringify(`./${PARTS_DIR}/${(value as string).slice(2)}`) };
    }),
  );
}

/** The function {@link importedOnFirstUse} adds: `import()` of a name it is given. */
const IMPORT_LATER = "__svc_import";

/**
 * A file of the bundle with each `import("./x.js")` of another file written
 * `__svc_import("./x.js")`, a function of the file doing `import(specifier)`: Deno reads and parses
 * before a start every file its entry imports, by `import()` of a written name too (the whole
 * bundle, run or not), but not one named by a variable, which it reads at that `import()` (a name
 * resolves against the file holding the `import()`, as before).
 */
export function importedOnFirstUse(file: string): string {
  const imports = writtenImports(file);
  if (!imports.length) return file;
  if (file.includes(IMPORT_LATER)) throw new Error(`the bundle already names ${IMPORT_LATER}`);
  const result = edited(
    file,
    imports.map(({ start, end, source }) => {
      const { start: from, end: to } = source as Node;
      return { start, end, text: `${IMPORT_LATER}(${file.slice(from, to)})` };
    }),
  );
  return `${result}
// the files of the bundle imported at their first use (tools/finish_bundle.ts)
function ${IMPORT_LATER}(specifier) {
  return import(specifier);
}
`;
}

/** The bundler's output: file names (the entry's, or `svc-parts/…`) → their text. */
export type BundleFiles = Map<string, string>;

/**
 * Reads what `deno bundle --code-splitting` wrote to `dir` (its entry `main.js`, and one file per
 * module reached only by `import()` or shared), finishes each file (see the module comment) and
 * returns them as they go: the entry as `entry`, the others in {@link PARTS_DIR}.
 */
async function finished(dir: string, entry: string, revision: string): Promise<BundleFiles> {
  const files: BundleFiles = new Map();
  for await (const { name, isFile } of Deno.readDir(dir)) {
    if (!isFile || !name.endsWith(".js")) throw new Error(`unexpected in ${dir}: ${name}`);
    const text = await Deno.readTextFile(`${dir}/${name}`);
    files.set(name === "main.js" ? entry : `${PARTS_DIR}/${name}`, text);
  }
  if (!files.has(entry)) throw new Error(`${dir} holds no main.js`);
  if (![...files.values()].some((text) => text.includes(REVISION_SLOT))) {
    throw new Error(`no file holds the revision slot ${REVISION_SLOT}`);
  }
  const docsFiles = Object.values(SWAGGER_UI_FILES).map(({ text }) => text);
  const docs = [...files.keys()].filter((name) => name.startsWith(`${PARTS_DIR}/docs_assets-`));
  if (docs.length !== 1) throw new Error(`one file of the docs page's files expected: ${docs}`);
  for (const [name, text] of files) {
    const stamped = lazyBuiltins(text.replaceAll(REVISION_SLOT, revision));
    const relocated = importedOnFirstUse(name === entry ? importsFromParts(stamped) : stamped);
    files.set(name, asciiOnly(name === docs[0] ? gzipDocsFiles(relocated, docsFiles) : relocated));
  }
  const started = await functionsRunAtStart(files, entry);
  for (const [name, text] of files) {
    files.set(name, compiledWithBundle(text, started.get(name) ?? new Set()).bundle);
  }
  return files;
}

if (import.meta.main) {
  const [dir, entry] = Deno.args;
  if (!dir || !entry) {
    console.error("usage: finish_bundle.ts BUNDLER_OUTPUT_DIR ENTRY_FILE");
    Deno.exit(2);
  }
  const revision = gitRevision(new URL("../", import.meta.url)) ?? "unknown";
  const slash = entry.lastIndexOf("/");
  const out = slash < 0 ? "." : entry.slice(0, slash);
  try {
    const files = await finished(dir, entry.slice(slash + 1), revision);
    await Deno.remove(`${out}/${PARTS_DIR}`, { recursive: true }).catch(() => {});
    await writeFiles(out, files);
    await Deno.remove(dir, { recursive: true });
  } catch (error) {
    console.error(`finish_bundle: ${dir}: ${(error as Error).message}`);
    Deno.exit(1);
  }
}
