/**
 * `gitRevision` reads what git keeps on disk (`lib/version.ts`): each layout is written by the real
 * `git` in a temporary folder and the answer compared with `git rev-parse HEAD`.
 */
import assert from "node:assert/strict";
import { gitRevision } from "../../lib/version.ts";
import { withTempDir } from "../e2e/server.ts";

async function git(cwd: string, ...args: string[]): Promise<string> {
  const output = await new Deno.Command("git", {
    args: ["-c", "user.name=Test", "-c", "user.email=test@example.com", ...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
    env: { GIT_CONFIG_NOSYSTEM: "1", HOME: cwd },
  }).output();
  const text = new TextDecoder().decode(output.success ? output.stdout : output.stderr);
  assert.ok(output.success, `git ${args.join(" ")}: ${text}`);
  return text.trim();
}

/** A repository in `dir` with `commits` commits on branch main. */
async function repository(dir: string, commits = 2): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  await git(dir, "init", "--quiet", "--initial-branch=main", dir);
  for (let n = 1; n <= commits; n++) {
    await Deno.writeTextFile(`${dir}/file.txt`, `version ${n}\n`);
    await git(dir, "add", "file.txt");
    await git(dir, "commit", "--quiet", "-m", `commit ${n}`);
  }
}

Deno.test("a branch checked out: its loose ref, then the same once packed", async () => {
  await withTempDir(async (dir) => {
    await repository(dir);
    const head = await git(dir, "rev-parse", "HEAD");
    assert.equal(gitRevision(dir), head);
    assert.equal(gitRevision(new URL(`file://${dir}/`)), head, "a file: URL of the folder");
    await git(dir, "pack-refs", "--all", "--prune");
    await assert.rejects(Deno.stat(`${dir}/.git/refs/heads/main`), "the ref is packed");
    assert.equal(gitRevision(dir), head);
  });
});

Deno.test("a detached HEAD: the commit it holds", async () => {
  await withTempDir(async (dir) => {
    await repository(dir);
    const first = await git(dir, "rev-parse", "HEAD~1");
    await git(dir, "checkout", "--quiet", "--detach", first);
    assert.equal(gitRevision(dir), first);
  });
});

Deno.test("a linked work tree (`.git` is a file): its own branch, from the shared refs", async () => {
  await withTempDir(async (dir) => {
    await repository(`${dir}/main`);
    await git(`${dir}/main`, "worktree", "add", "--quiet", "-b", "feature", `${dir}/linked`);
    await Deno.writeTextFile(`${dir}/linked/file.txt`, "feature\n");
    await git(`${dir}/linked`, "commit", "--quiet", "-am", "on the feature branch");
    assert.ok((await Deno.stat(`${dir}/linked/.git`)).isFile);
    const feature = await git(`${dir}/linked`, "rev-parse", "HEAD");
    assert.equal(gitRevision(`${dir}/linked`), feature);
    assert.equal(gitRevision(`${dir}/main`), await git(`${dir}/main`, "rev-parse", "HEAD"));
    assert.notEqual(gitRevision(`${dir}/main`), feature);
  });
});

Deno.test("no repository, a branch without commits, or a damaged HEAD: null", async () => {
  await withTempDir(async (dir) => {
    assert.equal(gitRevision(dir), null);
    await git(dir, "init", "--quiet", "--initial-branch=main", dir);
    assert.equal(gitRevision(dir), null, "HEAD names a branch that has no commit yet");
    await Deno.writeTextFile(`${dir}/.git/HEAD`, "ref: refs/heads/../../../etc/passwd\n");
    assert.equal(gitRevision(dir), null);
    await Deno.writeTextFile(`${dir}/.git/HEAD`, "not a ref\n");
    assert.equal(gitRevision(dir), null);
  });
});
