/**
 * The log's JSON lines, and their `time` written by arithmetic (`isoTime`): the same text as
 * `Date.prototype.toISOString`, whose first call costs the process a megabyte of memory.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { createLogger, isoTime } from "../../lib/log.ts";
import { loadConfig } from "../../lib/config.ts";
import { createServices } from "../../lib/services.ts";

Deno.test("isoTime writes what toISOString writes, from 1970 to 9999", () => {
  const last = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
  for (const ms of [0, 951_782_400_000, 1_709_164_800_123, 4_102_444_799_999, last]) {
    assert.equal(isoTime(ms), new Date(ms).toISOString(), `${ms}`);
  }
  fc.assert(
    fc.property(fc.integer({ min: 0, max: last }), (ms) => {
      assert.equal(isoTime(ms), new Date(ms).toISOString());
    }),
    { numRuns: 20_000 },
  );
});

Deno.test("a line: its time, level, message and fields; below the level, nothing", () => {
  const lines: string[] = [];
  const logger = createLogger("info", (line) => lines.push(line));
  const before = Date.now();
  logger.debug("hidden");
  logger.warn("shown", { port: 8090 });
  assert.equal(lines.length, 1);
  const line = JSON.parse(lines[0]!);
  assert.deepEqual({ ...line, time: undefined }, {
    time: undefined,
    level: "warn",
    msg: "shown",
    port: 8090,
  });
  const time = Date.parse(line.time);
  assert.ok(time >= before && time <= Date.now(), line.time);
  assert.equal(new Date(time).toISOString(), line.time);
  assert.equal(logger.enabled("debug"), false);
  assert.equal(logger.enabled("error"), true);
});

/** Runs `code` in a Deno process of its own (with lib/log.ts as `log`), stdin closed. */
function logProcess(code: string) {
  const log = new URL("../../lib/log.ts", import.meta.url).href;
  return new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", `import * as log from ${JSON.stringify(log)};\n${code}`],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

Deno.test("the default writer puts each line whole on stderr, a line larger than a pipe too", async () => {
  const large = "x".repeat(1_000_000); // more than a pipe holds at once
  const child = logProcess(`
    const logger = log.createLogger("info");
    logger.info("first", { n: 1 });
    logger.warn("large", { text: "x".repeat(1_000_000) });
    logger.error("last");
  `);
  const { code, stderr } = await child.output();
  assert.equal(code, 0);
  const lines = new TextDecoder().decode(stderr).split("\n");
  assert.equal(lines.pop(), "", "each line ends with a newline");
  assert.deepEqual(lines.map((line) => JSON.parse(line).msg), ["first", "large", "last"]);
  assert.equal(JSON.parse(lines[1]!).text, large);
});

Deno.test("a line that cannot be written is dropped: the caller goes on", async () => {
  // stderr's reader gone before the lines are written: each write fails (broken pipe)
  const child = logProcess(`
    await new Promise((resolve) => setTimeout(resolve, 300));
    const logger = log.createLogger("info");
    for (let i = 0; i < 100; i++) logger.error("nobody reads this", { text: "x".repeat(10_000) });
    console.log("went on");
  `);
  await child.stderr.cancel();
  const { code, stdout } = await child.output();
  assert.equal(new TextDecoder().decode(stdout), "went on\n");
  assert.equal(code, 0);
});

Deno.test("with Deno's OpenTelemetry export on, the server's lines go through the console", async () => {
  assert.equal(loadConfig({ SVC_KV: ":memory:" }).logToConsole, false);
  assert.equal(loadConfig({ SVC_KV: ":memory:", OTEL_DENO: "false" }).logToConsole, false);
  const config = loadConfig({ SVC_KV: ":memory:", OTEL_DENO: "true" });
  assert.equal(config.logToConsole, true);
  const printed: unknown[][] = [];
  const consoleError = console.error;
  console.error = (...args: unknown[]) => void printed.push(args);
  const services = await createServices(config);
  try {
    services.logger.warn("through the console", { n: 1 });
  } finally {
    console.error = consoleError;
    services.store.close();
  }
  assert.equal(printed.length, 1);
  assert.deepEqual({ ...JSON.parse(String(printed[0]![0])), time: undefined }, {
    time: undefined,
    level: "warn",
    msg: "through the console",
    n: 1,
  });
});
