import assert from "node:assert/strict";
import { CTI_USER_ACLS, expandAcls, isAllowed } from "../../lib/auth/acl.ts";
import { fillAcl } from "../../lib/auth/guard.ts";

/** [granted ACLs, required ACL, expected, user id (default "42")] */
const cases: [string[], string, boolean, string?][] = [
  // exact words, anchoring, case
  [["foo.bar"], "foo.bar", true],
  [["foo.bar"], "foo.bar.baz", false],
  [["foo.bar"], "foo", false],
  [["foo.bar"], "xfoo.bar", false],
  [["foo.bar"], "foo.barx", false],
  [["foo.bar"], "Foo.bar", false],
  [["FOO.BAR"], "foo.bar", false],
  [["foo.bar"], "fooxbar", false], // a dot is a dot, not "any character"
  [[], "foo.bar", false],
  // * : one word, possibly empty, also inside a word
  [["foo.*"], "foo.bar", true],
  [["foo.*"], "foo.", true],
  [["foo.*"], "foo", false],
  [["foo.*"], "foo.bar.baz", false],
  [["foo.*.*"], "foo.a.b", true],
  [["foo.*.*"], "foo.a", false],
  [["foo.*.baz"], "foo.bar.baz", true],
  [["foo.*.baz"], "foo.bar.qux.baz", false],
  [["foo.b*r"], "foo.bar", true],
  [["foo.b*r"], "foo.br", true],
  [["foo.b*r"], "foo.b.r", false],
  [["*"], "foo", true],
  [["*"], "foo.bar", false],
  [["*.bar"], "foo.bar", true],
  // # : one or more words, never zero
  [["foo.bar.#"], "foo.bar.baz.qux", true],
  [["foo.bar.#"], "foo.bar.baz", true],
  [["foo.bar.#"], "foo.bar", false],
  [["foo.#.qux"], "foo.a.b.c.qux", true],
  [["foo.#.qux"], "foo.qux", false],
  [["#"], "anything.at.all", true],
  [["#"], "x", true],
  [["foo.b#"], "foo.bar.baz", true],
  [["#.read"], "confd.users.read", true],
  [["#.read"], "confd.users.update", false],
  // ! denies whatever else grants, in any order
  [["#", "!confd.#"], "auth.users.read", true],
  [["#", "!confd.#"], "confd.users.read", false],
  [["!confd.#", "#"], "confd.users.read", false],
  [["!foo.bar"], "foo.bar", false],
  [["foo.bar", "!foo.baz"], "foo.bar", true],
  [["foo.*", "!foo.secret"], "foo.secret", false],
  [["foo.*", "!foo.secret"], "foo.public", true],
  // me : the word itself or the holder's id
  [["users.me.read"], "users.42.read", true],
  [["users.me.read"], "users.me.read", true],
  [["users.me.read"], "users.43.read", false],
  [["users.me.read"], "users.a_b.read", true, "a.b"],
  [["users.mex.read"], "users.42.read", false],
  [["users.*", "!users.me"], "users.42", false],
  [["users.*", "!users.me"], "users.7", true],
  // the required ACL is taken literally
  [["foo.*"], "foo.*", true],
  [["foo.bar"], "foo.*", false],
  [["foo.bar.baz"], "foo.#", false],
  [["foo.#"], "foo.#", true],
  [["foo.bar"], "!foo.bar", false],
  [["!foo.bar"], "!foo.bar", false],
  [["foo.b.r"], "foo.b*r", false],
  // regular expression characters in ACLs are plain characters
  [["foo.(bar)"], "foo.(bar)", true],
  [["foo.ba+"], "foo.baa", false],
  [["foo.[ab]"], "foo.a", false],
  [["foo.b?r"], "foo.br", false],
  // alias.ctiuser expands to the spec's list
  [["alias.ctiuser"], "svc.rest.contact.personal.read", true],
  [["alias.ctiuser"], "svc.rest.contact.personal.0b6f.update", true],
  [["alias.ctiuser"], "svc.rest.call_qualification.csv.3.2026-01-01.2026-01-31.read", true],
  [["alias.ctiuser"], "svc.rest.dial.number.alice.create", false],
  [["alias.ctiuser"], "alias.ctiuser", false],
  [["alias.ctiuser", "!svc.rest.mobile.#"], "svc.rest.mobile.push.register.create", false],
];

Deno.test("ACL matcher", async (t) => {
  assert.ok(cases.length >= 40);
  for (const [granted, required, expected, userId = "42"] of cases) {
    await t.step(
      `${JSON.stringify(granted)} ${expected ? "grants" : "refuses"} ${required}`,
      () => {
        assert.equal(isAllowed(granted, required, userId), expected);
      },
    );
  }
});

Deno.test("alias.ctiuser expands to the 23 ACLs of the spec, other ACLs kept in order", () => {
  assert.equal(CTI_USER_ACLS.length, 23);
  assert.deepEqual(expandAcls(["a.b", "alias.ctiuser", "c"]), ["a.b", ...CTI_USER_ACLS, "c"]);
});

Deno.test("fillAcl: each slot filled from the path values, dots made underscores", () => {
  assert.equal(fillAcl("svc.rest.dnd.create", {}), "svc.rest.dnd.create");
  assert.equal(
    fillAcl("svc.rest.dnd.{username}.create", { username: "a.b" }),
    "svc.rest.dnd.a_b.create",
  );
  assert.equal(
    fillAcl("{a}.x.{b}", { a: "1", b: "two.words" }),
    "1.x.two_words",
    "several slots, at the ends too",
  );
  assert.throws(() => fillAcl("svc.{username}", {}), /names no path value username/);
});
