/**
 * The last step of `deno task bundle` (`tools/finish_bundle.ts`): the functions a start runs are
 * compiled with the bundle, so that V8's code cache holds them.
 *
 * V8 compiles a function the first time it is called, unless the function is written where it is
 * likely to be called at once: in parentheses (`(function () {…})`). Deno writes a file's code
 * cache when it first compiles the file, so the cache holds only the code compiled then: every
 * later start compiled again, on first call, the route builders, zod's and Hono's constructors…
 * (500 functions, 300 KB of source; about 6 ms of a 59 ms start, docs/performance.md).
 *
 * {@link functionsRunAtStart} starts the finished bundle once, with V8's coverage, until its first
 * `GET /health` answer, then asks a path no route takes (which loads the API areas' file);
 * {@link compiledWithBundle} then writes the functions that ran in the form V8 compiles at once, in
 * each file of the bundle, each meaning what it meant:
 * - a top-level `function f(…) {…}` becomes `var f = (function (…) {…});`, moved to the top of the
 *   bundle, where it is defined before any code runs, as a declaration is (V8 names it `f`);
 * - an arrow function that uses no `this`, `arguments`, `super` or `new.target` becomes a function
 *   expression in parentheses (`(a) => a + 1` → `(function (a) { return a + 1; })`);
 * - a function expression is put in parentheses.
 * Class methods stay as they are (no other form means the same); object methods too (written as
 * function expressions they measured no faster).
 */
import { isNode, type Node, parse } from "./syntax.ts";

/** The nodes of `node`'s subtree, each with its parent, in source order. */
function* walk(node: Node, parent: Node | null = null): Generator<[Node, Node | null]> {
  yield [node, parent];
  for (const value of Object.values(node)) {
    for (const child of Array.isArray(value) ? value : [value]) {
      if (isNode(child)) yield* walk(child, node);
    }
  }
}

/**
 * Whether an arrow function may mean something else as a function expression: `this`,
 * `arguments`, `super` or `new.target` (or `import.meta`) anywhere inside it (nested functions
 * included: a rewrite only needs to be safe).
 */
function usesArrowScope(arrow: Node): boolean {
  for (const [node] of walk(arrow)) {
    if (node === arrow) continue;
    if (["ThisExpression", "Super", "MetaProperty"].includes(node.type)) return true;
    if (node.type === "Identifier" && node.name === "arguments") return true;
  }
  return false;
}

/** A rewrite of one function: its range in the source, and its new text. */
interface Edit {
  start: number;
  end: number;
  /** The new text; `inner(from, to)` gives the source in that range with the edits inside it. */
  text(inner: (from: number, to: number) => string): string;
}

/**
 * `bundle` with the functions that start at one of the offsets in `started` (V8's coverage
 * offsets: where the function's source begins) written so that V8 compiles them with the file
 * (see the module comment). Returns the new text and how many functions were rewritten.
 */
export function compiledWithBundle(
  bundle: string,
  started: ReadonlySet<number>,
): { bundle: string; functions: number } {
  const program = parse(bundle);
  const edits: Edit[] = [];
  const moved: Edit[] = [];
  const topLevel = new Set(program.body as Node[]);
  for (const [node, parent] of walk(program)) {
    if (!started.has(node.start)) continue;
    if (node.type === "FunctionDeclaration" && topLevel.has(node)) {
      const id = node.id as Node;
      // `function f` / `async function f` / `function* f` without the name: V8 names it `f`
      const head = bundle.slice(node.start, id.start).trimEnd();
      moved.push({
        start: node.start,
        end: node.end,
        text: (inner) => `var ${id.name} = (${head} ${inner(id.end, node.end)});`,
      });
      edits.push({ start: node.start, end: node.end, text: () => "" });
    } else if (node.type === "ArrowFunctionExpression" && !usesArrowScope(node)) {
      const params = node.params as Node[];
      const body = node.body as Node;
      edits.push({
        start: node.start,
        end: node.end,
        text: (inner) => {
          const list = params.length ? inner(params[0]!.start, params.at(-1)!.end) : "";
          const block = node.expression
            ? `{ return ${inner(body.start, body.end)}; }`
            : inner(body.start, body.end);
          return `(${node.async ? "async " : ""}function (${list}) ${block})`;
        },
      });
    } else if (
      node.type === "FunctionExpression" && parent?.type !== "MethodDefinition" &&
      !(parent?.type === "Property" && (parent.method || parent.kind !== "init"))
    ) {
      edits.push({
        start: node.start,
        end: node.end,
        // from the second character: the edit itself starts at the first
        text: (inner) => `(${bundle[node.start]}${inner(node.start + 1, node.end)})`,
      });
    }
  }
  // outermost first: an edit inside another is written by that one's `inner`
  edits.sort((a, b) => a.start - b.start || b.end - a.end);
  const inner = (from: number, to: number): string => {
    let text = "";
    let at = from;
    for (const edit of edits) {
      if (edit.start < at || edit.end > to) continue;
      text += bundle.slice(at, edit.start) + edit.text(inner);
      at = edit.end;
    }
    return text + bundle.slice(at, to);
  };
  const top = moved.map((declaration) => declaration.text(inner) + "\n").join("");
  const result = top + inner(0, bundle.length);
  parse(result); // still a module
  return { bundle: result, functions: edits.length };
}

/** Writes `files` (paths relative to `dir` → texts) into `dir`, making the folders they need. */
export async function writeFiles(dir: string, files: Iterable<[string, string]>): Promise<void> {
  for (const [name, text] of files) {
    await Deno.mkdir(`${dir}/${name}`.replace(/\/[^/]*$/, ""), { recursive: true });
    await Deno.writeTextFile(`${dir}/${name}`, text);
  }
}

/** V8's coverage of one script, as Deno's `--coverage` writes it (the inspector's format). */
interface ScriptCoverage {
  url: string;
  functions: { ranges: { startOffset: number; count: number }[] }[];
}

/**
 * The offsets where the functions begin that the bundle runs from its start to its first answer
 * to `GET /health`, then to `GET /nothing` (which loads the API areas), by file: `files` (names
 * relative to the entry's folder → texts) are written to a temporary folder and `entry` run there with V8's coverage, on the defaults (the simulator, a
 * store in memory), then stopped with SIGTERM (it writes its coverage as it exits). A bundle that
 * does not start stops the build.
 */
export async function functionsRunAtStart(
  files: ReadonlyMap<string, string>,
  entry: string,
): Promise<Map<string, Set<number>>> {
  const dir = await Deno.makeTempDir({ prefix: "svc-bundle-start-" });
  try {
    await writeFiles(dir, files);
    const file = `${dir}/${entry}`;
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { port } = listener.addr;
    listener.close();
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "-A",
        "--no-config",
        "--no-code-cache", // the cache of a file about to be removed would stay in DENO_DIR
        "--unstable-kv",
        "--unstable-cron",
        `--coverage=${dir}/coverage`,
        file,
      ],
      // only what the run needs: the builder's own SVC_* settings must not change what runs
      clearEnv: true,
      env: {
        ...Object.fromEntries(
          ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"].flatMap((name) => {
            const value = Deno.env.get(name);
            return value === undefined ? [] : [[name, value]];
          }),
        ),
        SVC_KV: ":memory:",
        SVC_HOSTNAME: "127.0.0.1",
        SVC_PORT: `${port}`,
        SVC_LOG_LEVEL: "error",
      },
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const errors = new Response(child.stderr).text();
    const deadline = Date.now() + 60_000;
    for (;;) {
      const answer = await fetch(`http://127.0.0.1:${port}/health`).catch(() => null);
      await answer?.body?.cancel();
      if (answer?.ok) break;
      const exited = await Promise.race([child.status, new Promise((ok) => setTimeout(ok, 5))]);
      if (exited || Date.now() > deadline) {
        if (!exited) child.kill();
        throw new Error(`the bundle did not answer GET /health: ${await errors}`);
      }
    }
    // a path no route takes: its 404 reads the whole route table, which loads and declares every
    // API area, whose functions then also compile with their file (the first request of each
    // later start runs them)
    const unknown = await fetch(`http://127.0.0.1:${port}/nothing`);
    await unknown.body?.cancel();
    if (unknown.status !== 404) throw new Error(`GET /nothing answered ${unknown.status}`);
    child.kill("SIGTERM");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stopped = await Promise.race([
      child.status,
      new Promise<null>((ok) => timer = setTimeout(() => ok(null), 10_000)),
    ]);
    clearTimeout(timer);
    if (!stopped) child.kill("SIGKILL");
    if (!stopped?.success) throw new Error(`the bundle did not stop cleanly: ${await errors}`);
    const started = new Map<string, Set<number>>();
    for await (const coverage of Deno.readDir(`${dir}/coverage`)) {
      const script = JSON.parse(await Deno.readTextFile(`${dir}/coverage/${coverage.name}`));
      for (const { url, functions } of [script] as ScriptCoverage[]) {
        const name = url.startsWith(`file://${dir}/`) ? url.slice(`file://${dir}/`.length) : "";
        if (!files.has(name)) continue;
        const offsets = started.get(name) ?? new Set<number>();
        started.set(name, offsets);
        for (const { ranges: [whole] } of functions) {
          if (whole && whole.count > 0 && whole.startOffset > 0) offsets.add(whole.startOffset);
        }
      }
    }
    if (!started.get(entry)?.size) {
      throw new Error("the coverage of the bundle's start names no function");
    }
    return started;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
