/** `ApiError` is an answer: no stack trace is captured for it, and other errors keep theirs. */
import assert from "node:assert/strict";
import { ApiError } from "../../lib/errors.ts";

Deno.test("an ApiError carries no stack frames; errors built after it still do", () => {
  const error = new ApiError(400, "InvalidJson", "not JSON");
  assert.ok(error instanceof Error);
  assert.equal(error.message, "not JSON");
  assert.doesNotMatch(error.stack ?? "", /\n\s+at /, "no frames");
  const other = new Error("a bug");
  assert.match(other.stack ?? "", /\n\s+at /, "Error.stackTraceLimit is back");
});
