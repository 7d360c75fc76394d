/**
 * No import circles (the developers' guide): the modules of the project, as `deno info` reads them
 * from every entry point (the server, the tools, the benchmarks, the deployment entry), type and
 * dynamic imports included, form no cycle.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const ENTRIES = ["main.ts", "bench/run.ts", "tools/openapi.ts", "deploy/deno_deploy.ts"];

interface ModuleInfo {
  specifier: string;
  dependencies?: { code?: { specifier: string }; type?: { specifier: string } }[];
}

/** Each local module → the local modules it imports. */
async function graph(): Promise<Map<string, string[]>> {
  const edges = new Map<string, string[]>();
  for (const entry of ENTRIES) {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      cwd: ROOT,
      stdout: "piped",
      stderr: "null",
    }).output();
    assert.ok(output.success, `deno info ${entry}`);
    const { modules } = JSON.parse(new TextDecoder().decode(output.stdout)) as {
      modules: ModuleInfo[];
    };
    for (const module of modules) {
      if (!module.specifier.startsWith(ROOT.href)) continue;
      const targets = (module.dependencies ?? []).flatMap((dep) =>
        [dep.code?.specifier, dep.type?.specifier].filter((s): s is string =>
          s !== undefined && s.startsWith(ROOT.href)
        )
      );
      edges.set(module.specifier.slice(ROOT.href.length), [
        ...new Set(targets.map((s) => s.slice(ROOT.href.length))),
      ]);
    }
  }
  return edges;
}

/** The strongly connected components of more than one module (Tarjan). */
function cycles(edges: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const target of edges.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(node, Math.min(low.get(node)!, index.get(target)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1) found.push(component.sort());
  };
  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return found;
}

Deno.test("the project's modules import each other in no circle", async () => {
  const edges = await graph();
  assert.ok(edges.size > 100, `the modules were read: ${edges.size}`);
  assert.deepEqual(cycles(edges), []);
});

Deno.test("cycles: a circle of three modules is found, a chain is not", () => {
  assert.deepEqual(cycles(new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]])), [
    ["a", "b", "c"],
  ]);
  assert.deepEqual(cycles(new Map([["a", ["b"]], ["b", ["c"]]])), []);
});
