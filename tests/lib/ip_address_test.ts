import assert from "node:assert/strict";
import { canonicalAddress } from "../../lib/ip_address.ts";

Deno.test("canonicalAddress: one form per address, null for what is none", () => {
  const cases: [string, string | null][] = [
    ["10.0.0.1", "10.0.0.1"],
    ["0.0.0.0", "0.0.0.0"],
    ["255.255.255.255", "255.255.255.255"],
    ["::1", "0:0:0:0:0:0:0:1"],
    ["0:0:0:0:0:0:0:1", "0:0:0:0:0:0:0:1"],
    ["0000:0000:0000:0000:0000:0000:0000:0001", "0:0:0:0:0:0:0:1"],
    ["::", "0:0:0:0:0:0:0:0"],
    ["2001:DB8::A", "2001:db8:0:0:0:0:0:a"],
    ["2001:db8:0:0:1::", "2001:db8:0:0:1:0:0:0"],
    ["fe80::1%eth0", "fe80:0:0:0:0:0:0:1%eth0"],
    ["::ffff:10.0.0.1", "10.0.0.1"],
    ["::FFFF:0a00:0001", "10.0.0.1"],
    ["64:ff9b::10.0.0.1", "64:ff9b:0:0:0:0:a00:1"],
    ["::10.0.0.1", "0:0:0:0:0:0:a00:1"],
    ["", null],
    ["localhost", null],
    ["10.0.0", null],
    ["10.0.0.256", null],
    ["010.0.0.1", null],
    ["10.0.0.1.", null],
    [" 10.0.0.1", null],
    ["1::2::3", null],
    [":1::", null],
    ["1::2:", null],
    ["1:2:3:4:5:6:7:8:9", null],
    ["1:2:3:4:5:6:7", null],
    ["1:2:3:4:5:6:7:8::", null],
    ["12345::1", null],
    ["g::1", null],
    ["::1%", null],
    ["[::1]", null],
    ["::ffff:10.0.0.256", null],
  ];
  for (const [text, canonical] of cases) {
    assert.equal(canonicalAddress(text), canonical, JSON.stringify(text));
  }
});
