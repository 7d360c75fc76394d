/**
 * The README as a new user follows it: every `sh` block, in order, pasted into one shell against a
 * fresh demo server (`deno task demo` on an empty store). Each command that shows its answer
 * (`# {…}`, `# […]`, `# HTTP/1.1 …` under it) must answer the same shape: every key the README
 * shows, the same error code, the same status line. The others must not answer an error. Blocks
 * that need what a test cannot have (a KDC, an Asterisk, the root's files) are marked in the
 * README with `<!-- not run by tests/e2e/readme_test.ts: why -->` on the line before.
 */
import assert from "node:assert/strict";
import { repoRoot, startServer, withTempDir } from "./server.ts";

/** One command of a block and the answer the README shows under it, if any. */
interface Command {
  text: string;
  shown: string | null;
  /** Where it is in the README, for the failure message. */
  line: number;
}

const NOT_RUN = /^<!-- not run by tests\/e2e\/readme_test\.ts: .+ -->$/;

/** The `sh` blocks the test runs, with their first line's number. */
export function runnableBlocks(readme: string): { lines: string[]; start: number }[] {
  const lines = readme.split("\n");
  const blocks: { lines: string[]; start: number }[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```sh") continue;
    const end = lines.indexOf("```", i + 1);
    let before = i - 1;
    while (before >= 0 && lines[before]!.trim() === "") before--;
    if (!NOT_RUN.test(lines[before]?.trim() ?? "")) {
      blocks.push({ lines: lines.slice(i + 1, end), start: i + 2 });
    }
    i = end;
  }
  return blocks;
}

/**
 * Splits a block into commands: a command goes on while its line ends with `\` or `|`; the comment
 * lines right under it are its shown answer when they start with `{`, `[` or `HTTP/`.
 */
export function commands(block: { lines: string[]; start: number }): Command[] {
  const found: Command[] = [];
  let i = 0;
  const { lines } = block;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.trim() === "" || line.startsWith("#")) {
      i++;
      continue;
    }
    const start = i;
    while (/[\\|]\s*$/.test(lines[i]!) && i + 1 < lines.length) i++;
    const text = lines.slice(start, i + 1).join("\n");
    i++;
    const comments: string[] = [];
    while (i < lines.length && lines[i]!.startsWith("# ")) comments.push(lines[i++]!.slice(2));
    const shown = /^(\{|\[|HTTP\/)/.test(comments[0] ?? "") ? comments.join("\n") : null;
    found.push({ text, shown, line: block.start + start });
  }
  return found;
}

/** A `"key":value` the README shows with a plain value (a string, a number, true, false, null). */
const SHOWN_VALUE =
  /"([A-Za-z_]+)":("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null)(?=[,}\]\s]|$)/g;

/** Values that differ from run to run: times, tokens, uuids, Asterisk-like ids; "…" elisions. */
const VOLATILE_VALUE =
  /^"(eyJ|\d{4}-\d\d-\d\d|[0-9a-f]{8}-[0-9a-f]{4}-|\d{9,}\.\d+"|[0-9a-f]{24,}"|.*…)/;

/** Keys whose values are times or generated ids, whatever they look like. */
const VOLATILE_KEYS = new Set([
  "token",
  "expires_at",
  "issued_at",
  "utc_expires_at",
  "utc_issued_at",
  "expiresAt",
  "issuedAt",
  "linkedId",
  "uniqueId",
  "callId",
  "call_id",
  "creation_time",
  "answer_time",
  "talking_to",
  "waitSeconds",
  "longestWaitSeconds",
  "loginSeconds",
  "pauseSeconds",
  "talkSeconds",
  "duration",
  "elapsed",
  "since",
  "loggedSince",
  "waitingSince",
  "start",
  "end",
  "date",
  "revision",
  "uptime",
  "timestamp",
]);

/** The first object of a shown list (`[{…}, …]`), up to its closing brace; null for others. */
function firstItem(shown: string): string | null {
  if (!shown.startsWith("[{")) return null;
  let depth = 0;
  let inString = false;
  for (let i = 1; i < shown.length; i++) {
    const char = shown[i];
    if (inString) {
      if (char === "\\") i++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === "{") depth++;
    else if (char === "}" && --depth === 0) return shown.slice(0, i + 1);
  }
  return null;
}

/** The first item of an answer that is a JSON list, as JSON text; null otherwise. */
function firstActualItem(actual: string): string | null {
  try {
    const parsed = JSON.parse(actual);
    return Array.isArray(parsed) && parsed.length ? JSON.stringify(parsed[0]) : null;
  } catch {
    return null;
  }
}

/**
 * What an answer must hold to have the shape the README shows: every key it shows, and every plain
 * value it shows for a key (but times and generated ids) somewhere in the answer under that key.
 */
function mismatch(shown: string, actual: string): string | null {
  if (shown.startsWith("HTTP/")) {
    const status = shown.split("\n")[0]!.trim();
    return actual.includes(status) ? null : `no "${status}" status line`;
  }
  for (const [, key] of shown.matchAll(/"([A-Za-z_]+)":/g)) {
    if (!actual.includes(`"${key}":`)) return `no "${key}" key`;
  }
  // a list's first item shown is the first item answered; the rest may be anywhere in the answer
  const first = firstItem(shown);
  const firstActual = first === null ? null : firstActualItem(actual);
  for (const part of [first, first === null ? shown : shown.slice(first.length)]) {
    if (part === null) continue;
    const where = part === first && firstActual !== null ? firstActual : actual;
    for (const [, key, value] of part.matchAll(SHOWN_VALUE)) {
      if (VOLATILE_KEYS.has(key!) || VOLATILE_VALUE.test(value!)) continue;
      if (!where.includes(`"${key}":${value}`)) return `not "${key}":${value}`;
    }
  }
  const error = shown.match(/"error":"([^"…]+)"/)?.[1];
  if (error && !actual.includes(`"error":"${error}"`)) return `not the error ${error}`;
  if (shown.startsWith("[") !== actual.trimStart().startsWith("[")) return "not the same JSON type";
  return null;
}

/** An answer that is an error in any area's shape. */
const ERROR_ANSWER = /^\s*(\{"error"|\["|\{"reason")/;

Deno.test("every README example runs, in order, against a fresh demo", async () => {
  const readme = await Deno.readTextFile(new URL("README.md", repoRoot));
  const all = runnableBlocks(readme).flatMap(commands);
  assert.ok(all.length > 50, `only ${all.length} commands found`);
  await withTempDir(async (dir) => {
    const server = await startServer({
      SVC_KV: `${dir}/demo.kv`,
      SVC_DEMO: "true",
      SVC_DEPRECATED_API_HOST: "127.0.0.1", // the 1.0 section's setting
    }, { timeoutMs: 30_000 });
    try {
      const base = server.baseUrl;
      // one shell, as a user pasting block after block: variables carry over
      const marker = (n: number) => `@@readme-command-${n}@@`;
      const script = all.map(({ text }, n) =>
        `${text.replaceAll("http://localhost:8090", base).replaceAll("http://127.0.0.1:8090", base)}
echo; echo '${marker(n)}'`
      ).join("\n");
      const output = await new Deno.Command("bash", {
        args: ["-c", script],
        cwd: dir,
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(180_000),
      }).output();
      const stdout = new TextDecoder().decode(output.stdout);
      const problems: string[] = [];
      let rest = stdout;
      all.forEach((command, n) => {
        const end = rest.indexOf(marker(n));
        if (end < 0) {
          problems.push(`README line ${command.line}: never finished`);
          return;
        }
        const actual = rest.slice(0, end).trim();
        rest = rest.slice(end + marker(n).length);
        const why = command.shown
          ? mismatch(command.shown, actual)
          : ERROR_ANSWER.test(actual)
          ? "an error where the README shows none"
          : null;
        if (why) problems.push(`README line ${command.line}: ${why}\n${command.text}\n→ ${actual}`);
      });
      assert.deepEqual(problems, [], new TextDecoder().decode(output.stderr));
      // and the server said nothing but its JSON log lines: no runtime warning
      const stray = server.stderrLines.filter((line) => !line.startsWith("{"));
      assert.deepEqual(stray, []);
      const errors = server.stderrLines.filter((line) => JSON.parse(line).level === "error");
      assert.deepEqual(errors, []);
    } finally {
      await server.stop();
    }
  });
});
