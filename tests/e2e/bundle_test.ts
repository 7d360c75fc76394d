/**
 * `deno task bundle` gives one self-contained file that serves: the bundle runs without the
 * repository's deno.json (`--no-config`) and answers `GET /health`.
 */
import assert from "node:assert/strict";
import { repoRoot, runServerToExit, startServer } from "./server.ts";

Deno.test("the bundle builds and serves GET /health", async () => {
  const build = await new Deno.Command(Deno.execPath(), {
    args: ["task", "bundle"],
    cwd: repoRoot,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  }).output();
  assert.ok(build.success, `deno task bundle failed:\n${new TextDecoder().decode(build.stderr)}`);
  assert.ok((await Deno.stat(new URL("dist/svc.js", repoRoot))).isFile, "dist/svc.js is missing");

  // --no-config: the bundle must not need the repository's deno.json or its dependencies.
  const server = await startServer({ SVC_KV: ":memory:" }, {
    args: [
      "run",
      "--quiet",
      "-A",
      "--no-config",
      "--unstable-kv",
      "--unstable-cron",
      "dist/svc.js",
    ],
  });
  try {
    const response = await fetch(`${server.baseUrl}/health`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
    assert.deepEqual(await response.json(), { status: "ok" });
  } finally {
    await server.stop();
  }

  // run as a user would who forgot the flags: one line saying which, no stack trace
  const bare = await runServerToExit({ SVC_KV: ":memory:" }, {
    args: ["run", "--quiet", "-A", "--no-config", "dist/svc.js"],
  });
  assert.equal(bare.code, 1, bare.stderr);
  assert.equal(
    bare.stderr,
    "svc: Deno KV and Deno.cron are off: run with --unstable-kv --unstable-cron, " +
      "e.g. deno run -A --unstable-kv --unstable-cron dist/svc.js\n",
  );
});
