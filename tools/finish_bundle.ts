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
 * 5. The code only a dynamic `import()` reaches (the docs page's files, the YAML writer, single
 *    sign-on…) is kept as text until its first use ({@link coldModules}): the first start of a file
 *    Deno has not run before parses all of its code (about 0.1 ms per KB, docs/performance.md),
 *    run or not, but not the text of a string.
 * 6. The functions a start runs are compiled with the file, so that V8's code cache holds them
 *    (`tools/eager_start.ts`): the finished bundle is started once to find them, which also
 *    checks that it serves.
 */
import { gzipSync } from "node:zlib";
import { gitRevision, REVISION_SLOT } from "../lib/version.ts";
import { compiledWithBundle, functionsRunAtStart } from "./eager_start.ts";
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

const nameOf = (node: unknown): string | null =>
  isNode(node) && node.type === "Identifier" ? node.name as string : null;

/**
 * The expression a dynamic `import()` became in the bundle, where it is one: the bundler writes
 * `import(x)` of a module it bundles as `Promise.resolve().then(() => (init_x(), x_exports))`, or
 * `Promise.resolve().then(() => __toESM(require_x()))` for a CommonJS one.
 */
function importedModule(node: Node): Node | null {
  if (node.type !== "CallExpression" || (node.arguments as Node[]).length !== 1) return null;
  const callee = node.callee as Node;
  if (callee.type !== "MemberExpression" || nameOf(callee.property) !== "then") return null;
  const resolved = callee.object as Node;
  if (resolved.type !== "CallExpression" || (resolved.arguments as Node[]).length) return null;
  const resolve = resolved.callee as Node;
  if (
    resolve.type !== "MemberExpression" || nameOf(resolve.object) !== "Promise" ||
    nameOf(resolve.property) !== "resolve"
  ) return null;
  const thunk = (node.arguments as Node[])[0]!;
  if (thunk.type !== "ArrowFunctionExpression" || (thunk.params as Node[]).length) return null;
  const body = thunk.body as Node;
  const calls = (call: unknown, prefix: string) =>
    isNode(call) && call.type === "CallExpression" &&
    nameOf(call.callee)?.startsWith(prefix) === true;
  if (body.type === "SequenceExpression") {
    const [init, namespace, ...rest] = body.expressions as Node[];
    return calls(init, "init_") && nameOf(namespace) !== null && !rest.length ? body : null;
  }
  const required = body.type === "CallExpression" && nameOf(body.callee) === "__toESM"
    ? (body.arguments as Node[])[0]
    : null;
  return calls(required, "require_") ? body : null;
}

/**
 * The names `node` mentions (an identifier anywhere, not a property name: a local variable of the
 * same name counts, which only keeps more code at start) and, when `imports` is given, the
 * dynamic imports in it (whose names are left out).
 */
function mentions(node: Node, names: Set<string>, imports?: Node[]): void {
  if (imports) {
    const imported = importedModule(node);
    if (imported) {
      imports.push(imported);
      return;
    }
  }
  if (node.type === "Identifier") {
    names.add(node.name as string);
    return;
  }
  for (const [key, value] of Object.entries(node)) {
    const propertyName = !node.computed && (
      (key === "property" && node.type === "MemberExpression") ||
      (key === "key" && ["Property", "MethodDefinition", "PropertyDefinition"].includes(node.type))
    );
    if (propertyName || key === "label") continue;
    for (const child of Array.isArray(value) ? value : [value]) {
      if (isNode(child)) mentions(child, names, imports);
    }
  }
}

/**
 * The names a top-level statement declares, when running it does nothing but declare them (a
 * function, `var x;`, `var x = {}`, the bundler's module wrappers `__esm({…})` and
 * `__commonJS({…})`); null for any other statement: it runs at start.
 */
function declared(statement: Node): string[] | null {
  if (statement.type === "FunctionDeclaration") return [nameOf(statement.id)!];
  if (statement.type !== "VariableDeclaration") return null;
  const names = [];
  for (const { id, init } of statement.declarations as { id: Node; init: Node | null }[]) {
    const wrapper = init?.type === "CallExpression" &&
      ["__esm", "__commonJS"].includes(nameOf(init.callee) ?? "") &&
      (init.arguments as Node[]).length === 1 &&
      (init.arguments as Node[])[0]!.type === "ObjectExpression";
    const empty = init?.type === "ObjectExpression" && !(init.properties as Node[]).length;
    if (nameOf(id) === null || !(init === null || wrapper || empty)) return null;
    names.push(nameOf(id)!);
  }
  return names;
}

/** The namespace object an `__export(x_exports, {…})` statement fills, if it is one. */
function filledNamespace(statement: Node): string | null {
  const call = statement.type === "ExpressionStatement" ? statement.expression as Node : null;
  if (call?.type !== "CallExpression" || nameOf(call.callee) !== "__export") return null;
  const [namespace, getters] = call.arguments as Node[];
  return getters?.type === "ObjectExpression" ? nameOf(namespace) : null;
}

/** Names the bundle must not declare: {@link coldModules} adds them. */
const COLD_CACHE = "__svc_cold";
const COLD_LOADER = "__svc_cold_modules";

/**
 * The bundle with the code only dynamic imports reach kept as the text of one string, evaluated
 * (a direct `eval`, in the bundle's scope) at the first such import.
 *
 * Every top-level statement that runs at start (anything but a declaration, see {@link declared})
 * and every declaration it mentions, and so on, stays code; the dynamic imports found in them
 * ({@link importedModule}) are not followed. What those imports reach, and nothing needed at start,
 * goes into the text, in its order; each such import evaluates the text once, then its module's
 * expression in it. The code in the text sees the bundle's top-level names as the bundle does;
 * the bundle never names what the text declares (else it would have stayed code). A statement
 * using `import.meta`, which evaluated code cannot, stays code.
 */
export function coldModules(bundle: string): { bundle: string; cold: number } {
  const statements = parse(bundle, "module").body as Node[];
  const declaredBy = new Map<string, number[]>();
  const atStart: number[] = [];
  const named: Set<string>[] = [];
  const importsIn: Node[][] = [];
  statements.forEach((statement, index) => {
    const names = new Set<string>();
    const imports: Node[] = [];
    mentions(statement, names, imports);
    named.push(names);
    importsIn.push(imports);
    const namespace = filledNamespace(statement);
    const declares = namespace === null ? declared(statement) : [namespace];
    const importMeta = bundle.slice(statement.start, statement.end).includes("import.meta");
    if (declares === null || importMeta) atStart.push(index);
    for (const name of declares ?? []) declaredBy.set(name, [...declaredBy.get(name) ?? [], index]);
  });
  for (const name of [COLD_CACHE, COLD_LOADER]) {
    if (declaredBy.has(name) || named.some((names) => names.has(name))) {
      throw new Error(`the bundle already names ${name}`);
    }
  }
  /** Adds to `into` what `from` reach through the names they mention, `outside` apart. */
  const reach = (from: number[], into: Set<number>, outside = new Set<number>()) => {
    const stack = [...from];
    while (stack.length) {
      const index = stack.pop()!;
      if (into.has(index) || outside.has(index)) continue;
      into.add(index);
      for (const name of named[index]!) stack.push(...declaredBy.get(name) ?? []);
    }
  };
  const needed = new Set<number>();
  reach(atStart, needed);
  const importedBy = (indexes: Iterable<number>) =>
    [...indexes].flatMap((index) =>
      importsIn[index]!.flatMap((imported) => {
        const names = new Set<string>();
        mentions(imported, names);
        return [...names].flatMap((name) => declaredBy.get(name) ?? []);
      })
    );
  // what the imports of needed code reach, then what the imports of that reach, and so on
  const cold = new Set<number>();
  for (let next = importedBy(needed); next.length;) {
    const before = cold.size;
    reach(next, cold, needed);
    next = before === cold.size ? [] : importedBy(cold);
  }
  if (!cold.size) return { bundle, cold: 0 };
  const coldNames = new Set([...cold].flatMap((index) => declared(statements[index]!) ?? []));
  const edits: { start: number; end: number; text: string }[] = [];
  const modules = new Map<string, string>(); // expression → its key in the evaluated text
  for (const index of needed) {
    for (const imported of importsIn[index]!) {
      const names = new Set<string>();
      mentions(imported, names);
      if (![...names].some((name) => coldNames.has(name))) continue;
      const expression = bundle.slice(imported.start, imported.end);
      const key = modules.get(expression) ?? `m${modules.size}`;
      modules.set(expression, key);
      edits.push({ start: imported.start, end: imported.end, text: `${COLD_LOADER}().${key}()` });
    }
  }
  const coldStatements = [...cold].sort((a, b) => a - b).map((index) => statements[index]!);
  for (const { start, end } of coldStatements) edits.push({ start, end, text: "" });
  const entries = [...modules].map(([expression, key]) => `${key}: () => (${expression})`);
  const text = [
    ...coldStatements.map(({ start, end }) => bundle.slice(start, end)),
    `({ ${entries.join(", ")} });`,
  ].join("\n");
  parse(`"use strict";\n${text}`, "script"); // as eval will read it
  const pieces = [];
  let copied = 0;
  for (const edit of edits.sort((a, b) => a.start - b.start)) {
    pieces.push(bundle.slice(copied, edit.start), edit.text);
    copied = edit.end;
  }
  pieces.push(
    bundle.slice(copied),
    `
// the modules only import() reaches (tools/finish_bundle.ts), compiled at the first
var ${COLD_CACHE};
function ${COLD_LOADER}() {
  return ${COLD_CACHE} ??= eval(${JSON.stringify(text)});
}
`,
  );
  const result = pieces.join("");
  parse(result, "module");
  return { bundle: result, cold: cold.size };
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
    const lean = coldModules(finished).bundle;
    await Deno.writeTextFile(
      file,
      compiledWithBundle(lean, await functionsRunAtStart(lean)).bundle,
    );
  } catch (error) {
    console.error(`finish_bundle: ${file}: ${(error as Error).message}`);
    Deno.exit(1);
  }
}
