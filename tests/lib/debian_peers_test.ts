/** The test peers' packages: `SVC_TEST_NO_INSTALL=1` skips, with a notice, what would be installed. */
import assert from "node:assert/strict";
import { skipWithoutPackages } from "../peers/debian.ts";

Deno.test("SVC_TEST_NO_INSTALL=1 skips the tests whose packages are missing, and only those", async () => {
  const missing = ["svc-test-no-such-package"];
  const before = Deno.env.get("SVC_TEST_NO_INSTALL");
  try {
    Deno.env.delete("SVC_TEST_NO_INSTALL");
    assert.equal(await skipWithoutPackages(missing, "nothing"), false); // installed on demand
    Deno.env.set("SVC_TEST_NO_INSTALL", "1");
    assert.equal(await skipWithoutPackages(missing, "nothing"), true);
    assert.equal(await skipWithoutPackages(["dpkg"], "always there"), false);
  } finally {
    if (before === undefined) Deno.env.delete("SVC_TEST_NO_INSTALL");
    else Deno.env.set("SVC_TEST_NO_INSTALL", before);
  }
});
