/**
 * What `GET /version` and the `svc_build_info` metric tell: svc's version (`version` in deno.json)
 * and the git revision it was built from.
 *
 * - From a source checkout, the revision is read from the repository's `.git` once, when first
 *   asked (at start-up: the metrics ask for it), from files only (the start task has no
 *   `--allow-run` for `git`).
 * - `deno task bundle` writes the revision into `dist/svc.js` (`tools/finish_bundle.ts` replaces
 *   {@link REVISION_SLOT}), so a bundle copied anywhere still tells it.
 * - `unknown` when neither is there (a compiled executable, Deno Deploy, a checkout without `.git`).
 */
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
    const folder = root instanceof URL ? decodeURIComponent(root.pathname) : root;
    const dotGit = `${folder}/.git`;
    const gitDir = Deno.statSync(dotGit).isFile ? linkedGitDir(folder, dotGit) : dotGit;
    if (gitDir === null) return null;
    const head = Deno.readTextFileSync(`${gitDir}/HEAD`).trim();
    if (COMMIT.test(head)) return head;
    const ref = /^ref:\s*(refs\/\S+)$/.exec(head)?.[1];
    if (!ref || ref.split("/").includes("..")) return null;
    const commonDir = sharedGitDir(gitDir);
    for (const dir of new Set([gitDir, commonDir])) {
      const loose = readIfThere(`${dir}/${ref}`)?.trim();
      if (loose && COMMIT.test(loose)) return loose;
    }
    return packedRef(readIfThere(`${commonDir}/packed-refs`) ?? "", ref);
  } catch {
    return null; // no .git, not readable (Deno's permissions), or not git's layout
  }
}

/** The git folder a `.git` file names (`gitdir: <path>`, relative to the work tree's folder). */
function linkedGitDir(folder: string, dotGitFile: string): string | null {
  const path = /^gitdir:\s*(.+?)\s*$/m.exec(Deno.readTextFileSync(dotGitFile))?.[1];
  return path ? below(folder, path) : null;
}

/** The folder holding the shared refs: the one `commondir` names (linked work trees), else itself. */
function sharedGitDir(gitDir: string): string {
  const common = readIfThere(`${gitDir}/commondir`)?.trim();
  return common ? below(gitDir, common) : gitDir;
}

/**
 * `path` as git means it in a file of `folder`: itself when absolute, else below `folder` (the
 * system resolves its `..`). Plain text, not `node:path`: loading Deno's Node layer for two joins
 * cost about 5 ms of every start.
 */
function below(folder: string, path: string): string {
  return /^([A-Za-z]:)?[\\/]/.test(path) ? path : `${folder}/${path}`;
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
