/**
 * The docs stand alone: no Markdown file of the repository names a file outside it, and every
 * relative link points to a file that exists and, with `#anchor`, to a heading of that file.
 */
import assert from "node:assert/strict";
import { posix } from "node:path";
import { fileURLToPath } from "node:url";

/** Text that only makes sense on the machine the project was written on. */
const FORBIDDEN = ["../shared", "spec/control-api", "spec/decisions"];
/** Folders that are not the repository's own files (see .gitignore). */
const SKIPPED = new Set([".git", "node_modules", "data", "dist", "cov"]);

interface Repo {
  /** Every Markdown file, by its path from the repository root, with its text. */
  markdown: Map<string, string>;
  /** Every file and folder path from the repository root. */
  paths: Set<string>;
}

/** GitHub's heading anchor: lowercase, punctuation dropped, each space a `-`. */
function slug(heading: string): string {
  return heading.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "").replace(/ /g, "-");
}

/** A fenced code block, up to its closing fence or the end of the text. */
const FENCED = /^ {0,3}(```|~~~)[^\n]*\n[\s\S]*?(?:^ {0,3}\1[^\n]*$|(?![\s\S]))/gm;

/** An ATX heading (`## Text`, optional closing `#`s). */
const HEADING = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/gm;

/** Blanks what is code (fenced blocks, inline spans), keeping the line breaks for line numbers. */
function withoutCode(text: string): string {
  const keepLines = (code: string) => code.replace(/[^\n]/g, "");
  return text.replace(FENCED, keepLines).replace(/(`+)[\s\S]*?\1/g, keepLines);
}

/** The anchors of a Markdown text's headings; a repeated heading gets `-1`, `-2`… as on GitHub. */
function anchors(text: string): Set<string> {
  const found = new Set<string>();
  for (const [, heading = ""] of text.replace(FENCED, "").matchAll(HEADING)) {
    const base = slug(heading.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").trim());
    let anchor = base;
    for (let n = 1; found.has(anchor); n++) anchor = `${base}-${n}`;
    found.add(anchor);
  }
  return found;
}

/** Every problem, as `file:line: what`. */
function problems(repo: Repo): string[] {
  const found: string[] = [];
  for (const [file, text] of repo.markdown) {
    const lineOf = (index: number, within = text) => within.slice(0, index).split("\n").length;
    for (const word of FORBIDDEN) {
      for (let at = text.indexOf(word); at >= 0; at = text.indexOf(word, at + 1)) {
        found.push(`${file}:${lineOf(at)}: names ${word}, outside the repository`);
      }
    }
    const prose = withoutCode(text);
    const links = [
      ...prose.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g),
      ...prose.matchAll(/^ {0,3}\[[^\]]+\]:[ \t]*<?([^\s>]+)/gm),
    ];
    for (const link of links) {
      const target = link[1] ?? "";
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:…
      const where = `${file}:${lineOf(link.index, prose)}: ${target}`;
      const hash = target.indexOf("#");
      const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
      const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
      if (pathPart.startsWith("/")) {
        found.push(`${where}: an absolute path, outside the repository`);
        continue;
      }
      const path = pathPart === ""
        ? file
        : posix.normalize(posix.join(posix.dirname(file), pathPart)).replace(/\/$/, "");
      if (path === ".." || path.startsWith("../")) {
        found.push(`${where}: outside the repository`);
      } else if (path !== "." && !repo.paths.has(path)) {
        found.push(`${where}: no such file`);
      } else if (anchor !== undefined) {
        const linked = repo.markdown.get(path);
        if (linked === undefined) found.push(`${where}: an anchor in a file that is not Markdown`);
        else if (!anchors(linked).has(anchor)) found.push(`${where}: no such heading`);
      }
    }
  }
  return found;
}

/** Reads the repository's files and folders (without the ignored ones) and its Markdown. */
async function readRepo(root: string): Promise<Repo> {
  const repo: Repo = { markdown: new Map(), paths: new Set() };
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(posix.join(root, dir))) {
      if (SKIPPED.has(entry.name)) continue;
      const path = dir === "" ? entry.name : `${dir}/${entry.name}`;
      repo.paths.add(path);
      if (entry.isDirectory) await walk(path);
      else if (entry.name.endsWith(".md")) {
        repo.markdown.set(path, await Deno.readTextFile(posix.join(root, path)));
      }
    }
  };
  await walk("");
  return repo;
}

Deno.test("slugs are GitHub's heading anchors", () => {
  assert.equal(slug("Dial, DND, forwards, history (2.0)"), "dial-dnd-forwards-history-20");
  assert.equal(slug("5. Dial, DND, forwards, history"), "5-dial-dnd-forwards-history");
  assert.equal(
    slug("The Asterisk adapter (`SVC_PLATFORM=asterisk`)"),
    "the-asterisk-adapter-svc_platformasterisk",
  );
  assert.equal(
    slug("Agent daemon (`/agents`, `/users/me/agents`, `/status`)"),
    "agent-daemon-agents-usersmeagents-status",
  );
  assert.equal(slug("Ça — marche"), "ça--marche");
});

Deno.test("the check finds outside paths, missing files and missing headings", () => {
  const markdown = new Map([
    ["README.md", "# Title\n\n## Quick start\n\nSee [a](docs/a.md#usage) and [q](#quick-start).\n"],
    [
      "docs/a.md",
      [
        "# A",
        "## Usage",
        "## Usage",
        "Fine: [readme](../README.md), [dir](../docs/), [twice](#usage-1), [web](https://x.org/#y),",
        "[main](../main.ts).",
        "As in ../shared/spec/decisions.md §5. Not [there](b.md) nor [here](#usage-2) nor",
        "[up](../../other/x.md), [root](/etc/hosts), [code](../main.ts#top),",
        "[spaced](../README.md#quick%20start) or [gone](../README.md#try-it).",
        "`[in code](nowhere.md)`",
        "```sh",
        "# Usage-2",
        "see [fenced](nowhere.md)",
        "```",
        "[ref]: missing.md",
      ].join("\n"),
    ],
  ]);
  const paths = new Set(["README.md", "docs", "docs/a.md", "main.ts"]);
  assert.deepEqual(problems({ markdown, paths }), [
    "docs/a.md:6: names ../shared, outside the repository",
    "docs/a.md:6: names spec/decisions, outside the repository",
    "docs/a.md:6: b.md: no such file",
    "docs/a.md:6: #usage-2: no such heading",
    "docs/a.md:7: ../../other/x.md: outside the repository",
    "docs/a.md:7: /etc/hosts: an absolute path, outside the repository",
    "docs/a.md:7: ../main.ts#top: an anchor in a file that is not Markdown",
    "docs/a.md:8: ../README.md#quick%20start: no such heading",
    "docs/a.md:8: ../README.md#try-it: no such heading",
    "docs/a.md:14: missing.md: no such file",
  ]);
});

Deno.test("the repository's Markdown names nothing outside it and every relative link resolves", async () => {
  const repo = await readRepo(fileURLToPath(new URL("../", import.meta.url)));
  for (const file of ["README.md", "docs/decisions.md", "deploy/README.md"]) {
    assert.ok(repo.markdown.has(file), `${file} is checked`);
  }
  assert.deepEqual(problems(repo), []);
});
