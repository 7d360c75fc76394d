/**
 * The log's JSON lines, and their `time` written by arithmetic (`isoTime`): the same text as
 * `Date.prototype.toISOString`, whose first call costs the process a megabyte of memory.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { createLogger, isoTime } from "../../lib/log.ts";

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
