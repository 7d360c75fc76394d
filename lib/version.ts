/**
 * What `GET /version` and the `svc_build_info` metric tell: svc's version (`version` in deno.json)
 * and the git revision it was built from.
 *
 * - From a source checkout, the revision is read from the repository's `.git` once, when first
 *   asked (at start-up: the metrics ask for it), from files only (the start task has no
 *   `--allow-run` for `git`).
 * - `deno task bundle` writes the revision into `dist/svc.js` (`tools/stamp_revision.ts` replaces
 *   {@link REVISION_SLOT}), so a bundle copied anywhere still tells it.
 * - `unknown` when neither is there (a compiled executable, Deno Deploy, a checkout without `.git`).
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import denoJson from "../deno.json" with { type: "json" };

export interface BuildInfo {
  /** deno.json's `version`, e.g. `0.18.0`. */
  version: string;
  /** The full commit hash, or `unknown`. */
  revision: string;
}

/**
 * The only place this text appears in the sources: in the bundle, `deno task bundle` replaces it
 * with the revision (or `unknown`); anything else means "not stamped: read `.git`".
 */
export const REVISION_SLOT = "@@svc-build-revision@@";

/** A commit hash: SHA-1, or SHA-256 in a repository using it. */
const COMMIT = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** The repository root of the sources (lib/ is one level below). */
const SOURCE_ROOT = new URL("../", import.meta.url);

let known: BuildInfo | null = null;

/** svc's version and revision; read once, then remembered. */
export function buildInfo(): BuildInfo {
  known ??= {
    version: denoJson.version,
    revision: stampedRevision() ?? gitRevision(SOURCE_ROOT) ?? "unknown",
  };
  return known;
}

/** The revision `deno task bundle` wrote into this file, or null when it was not stamped. */
function stampedRevision(): string | null {
  const slot: string = REVISION_SLOT; // a string, not the literal type: the bundle rewrites it
  return COMMIT.test(slot) || slot === "unknown" ? slot : null;
}

/**
 * The commit checked out in the git work tree at `root` (a `file:` URL or a path), or null when
 * there is none or it cannot be read. Follows what git itself keeps on disk: `.git` is a folder, or
 * a file `gitdir: <path>` (a linked work tree, a submodule); `HEAD` holds a commit (detached) or
 * `ref: refs/heads/<branch>`; the branch is a file under `refs/`, in the work tree's own git
 * folder or in the shared one its `commondir` names, else a line of `packed-refs`.
 *
 * @example
 * gitRevision(new URL("../", import.meta.url)); // "c8aa7a3…" or null
 */
export function gitRevision(root: URL | string): string | null {
  try {
    const dotGit = join(root instanceof URL ? fileURLToPath(root) : root, ".git");
    const gitDir = Deno.statSync(dotGit).isFile ? linkedGitDir(dotGit) : dotGit;
    if (gitDir === null) return null;
    const head = Deno.readTextFileSync(join(gitDir, "HEAD")).trim();
    if (COMMIT.test(head)) return head;
    const ref = /^ref:\s*(refs\/\S+)$/.exec(head)?.[1];
    if (!ref || ref.split("/").includes("..")) return null;
    const commonDir = sharedGitDir(gitDir);
    for (const dir of new Set([gitDir, commonDir])) {
      const loose = readIfThere(join(dir, ref))?.trim();
      if (loose && COMMIT.test(loose)) return loose;
    }
    return packedRef(readIfThere(join(commonDir, "packed-refs")) ?? "", ref);
  } catch {
    return null; // no .git, not readable (Deno's permissions), or not git's layout
  }
}

/** The git folder a `.git` file names (`gitdir: <path>`, relative to the file's folder). */
function linkedGitDir(dotGitFile: string): string | null {
  const path = /^gitdir:\s*(.+?)\s*$/m.exec(Deno.readTextFileSync(dotGitFile))?.[1];
  return path ? resolve(dirname(dotGitFile), path) : null;
}

/** The folder holding the shared refs: the one `commondir` names (linked work trees), else itself. */
function sharedGitDir(gitDir: string): string {
  const common = readIfThere(join(gitDir, "commondir"))?.trim();
  return common ? resolve(gitDir, common) : gitDir;
}

/** The commit of `ref` in a `packed-refs` file's text (`<commit> <ref>` lines), else null. */
function packedRef(packed: string, ref: string): string | null {
  for (const line of packed.split("\n")) {
    const [commit, name] = line.trim().split(" ");
    if (name === ref && commit && COMMIT.test(commit)) return commit;
  }
  return null;
}

function readIfThere(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}
