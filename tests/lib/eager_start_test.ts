/**
 * `tools/eager_start.ts`, the step of `deno task bundle` that writes the functions a start runs
 * in the form V8 compiles with the file: the rewritten module means what it meant, and the
 * functions are found by starting the file.
 */
import assert from "node:assert/strict";
import { compiledWithBundle, functionsRunAtStart } from "../../tools/eager_start.ts";
import { isNode, type Node, parse } from "../../tools/syntax.ts";
import { importSource as load } from "../helpers.ts";

/** Where each function of `source` begins, as V8's coverage names them. */
function functionStarts(source: string): Set<number> {
  const starts = new Set<number>();
  const visit = (node: Node) => {
    if (/Function/.test(node.type)) starts.add(node.start);
    for (const value of Object.values(node)) {
      for (const child of Array.isArray(value) ? value : [value]) if (isNode(child)) visit(child);
    }
  };
  visit(parse(source));
  return starts;
}

const MODULE = `
export const early = used(2); // a declaration further down, called before it: still defined
function used(x) { return double(x) + 1; }
function double(x) { return x * 2; }
function named() {}
async function* pairs() { yield 1; yield 2; }
export const sum = (a, b = 1) => a + b;
export const later = async (x) => { await null; return x; };
export const object = () => ({ a: 1 });
export const last = () => (1, 2);
export const one = x => x;
export const bound = { v: 5, get: function () { return [1].map(() => this.v); } };
export const count = function () { return (() => arguments.length)(); };
export const parenthesized = (function () { return 7; })();
export class Shape { area() { return [2].map((side) => side * side)[0]; } }
export { named, pairs }; // as the bundler exports
`;

Deno.test("the functions rewritten for eager compiling mean what they meant", async () => {
  const { bundle, functions } = compiledWithBundle(MODULE, functionStarts(MODULE));
  assert.equal(functions, 13);
  // declarations moved to the top, in parentheses; arrows as function expressions
  assert.match(bundle, /^var used = \(function \(x\) \{ return double\(x\) \+ 1; \}\);$/m);
  assert.match(bundle, /^var pairs = \(async function\* \(\) \{/m);
  assert.match(bundle, /export const sum = \(function \(a, b = 1\) \{ return a \+ b; \}\);/);
  // an arrow reading this or arguments stays one
  assert.match(bundle, /\(\) => this\.v/);
  assert.match(bundle, /\(\) => arguments\.length/);
  const module = await load(bundle);
  assert.equal(module.early, 5);
  assert.equal((module.named as () => void).name, "named");
  const pairs = [];
  for await (const value of (module.pairs as () => AsyncGenerator<number>)()) pairs.push(value);
  assert.deepEqual(pairs, [1, 2]);
  assert.equal((module.sum as (a: number) => number)(1), 2);
  assert.equal(await (module.later as (x: number) => Promise<number>)(3), 3);
  assert.deepEqual((module.object as () => unknown)(), { a: 1 });
  assert.equal((module.last as () => number)(), 2);
  assert.equal((module.one as (x: number) => number)(4), 4);
  assert.deepEqual((module.bound as { get(): number[] }).get(), [5]);
  assert.equal((module.count as (...args: number[]) => number)(1, 2, 3), 3);
  assert.equal(module.parenthesized, 7);
  assert.equal(new (module.Shape as new () => { area(): number })().area(), 4);
});

Deno.test("functions that did not run at start are left as they are", () => {
  assert.deepEqual(compiledWithBundle(MODULE, new Set()), { bundle: MODULE, functions: 0 });
});

/** A server of the bundle's kind: serves `/health` on SVC_HOSTNAME:SVC_PORT, stops on SIGTERM. */
const SERVER = `
function atStart() { return "ok"; }
function neverCalled() { return "no"; }
const answer = atStart();
Deno.addSignalListener("SIGTERM", () => Deno.exit(0));
Deno.serve(
  { hostname: Deno.env.get("SVC_HOSTNAME"), port: Number(Deno.env.get("SVC_PORT")), onListen() {} },
  (request) =>
    new URL(request.url).pathname === "/health" ? new Response(answer) : onOtherPath(),
);
function onOtherPath() { return new Response(part(), { status: 404 }); }
`;

/** The server as a bundle: its entry, and a file of it in svc-parts/. */
const SERVER_FILES = new Map([
  ["svc.js", `import { part } from "./svc-parts/part.js";\n${SERVER}`],
  ["svc-parts/part.js", 'export function part() { return "part"; }\nexport function not() {}\n'],
]);

Deno.test("the functions run at start, and at a request no route takes, are found by file", async () => {
  const started = await functionsRunAtStart(SERVER_FILES, "svc.js");
  const entry = SERVER_FILES.get("svc.js")!;
  const inEntry = started.get("svc.js")!;
  assert.ok(inEntry.has(entry.indexOf("function atStart")), "atStart ran");
  assert.ok(!inEntry.has(entry.indexOf("function neverCalled")), "neverCalled did not");
  // the handler had answered GET /health, then GET /nothing
  assert.ok(inEntry.has(entry.indexOf("(request) =>")), "the handler ran");
  assert.ok(inEntry.has(entry.indexOf("function onOtherPath")), "the request no route takes ran");
  const part = SERVER_FILES.get("svc-parts/part.js")!;
  assert.deepEqual([...started.get("svc-parts/part.js")!], [part.indexOf("function part")]);
});

Deno.test("a file that does not serve stops the build, with what it printed", async () => {
  await assert.rejects(
    functionsRunAtStart(
      new Map([["svc.js", 'throw new Error("no configuration here");']]),
      "svc.js",
    ),
    /did not answer GET \/health: [^]*no configuration here/,
  );
});
